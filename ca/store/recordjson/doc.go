// Package recordjson decodes the record lines of the issuance database,
// the JSON store.EncodeRecord writes, through a hand-written twin of
// encoding/json for lines in that exact form (its field order, strings
// without escapes, UTC times) and through encoding/json for any other.
//
// The twin stays under the rule for fast twins (design.md): it saves
// more than 5% of the CPU of listing records and of planning renewals
// (docs/performance.md, "The record JSON fast path, by the rule for fast
// twins"). Its differential tests (a table, 20,000 generated records,
// FuzzDecodeRecordJSON) hold it equal to encoding/json, and the build tag
// stdrecordjson switches it off, so that every test that reads records
// runs on the standard path too (scripts/test.sh does).
//
// ParseUTCTime, the twin's reader of a UTC time, is also the revocation
// log's (package file).
package recordjson
