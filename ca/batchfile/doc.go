// Package batchfile reads the file of certificate requests that
// `minica issue client|server --from FILE` issues in one run: CSV with a
// header row, or JSON Lines, one request a row.
//
// # Format
//
// The columns ([Columns]) are name, email, cn, ou, o, dns, ip, uri and
// validity; only name is required. A CSV cell of a list column (all but
// name, cn and validity) holds items separated by ";"; in JSON Lines such a
// field may also be an array of strings, and null is an empty cell. The
// header's names are case-insensitive. A UTF-8 byte order mark and CRLF
// line ends are accepted. The format is told by the file name's extension
// (.csv; .jsonl, .ndjson or .json), else by the first byte that is not
// white space ('{' for JSON Lines).
//
// # Checks
//
// [Read] builds a [ca.Request] of each row with the [Defaults] the command
// line gives (profile, key type, validity, email in the subject), checks
// every cell with the validators of package ca, and refuses a name given on
// two rows. It reports every problem it finds ([Problems]) with the line
// and column of the cell, so that one run lists them all; a problem of the
// file's syntax ends the reading there. It knows nothing of a CA
// directory: checking the rows against the CA's database is the caller's.
//
// It sits beside package ca, which it imports for the request and its
// validators and which does not import it: cmd/minica reads the file here
// and hands the rows' requests to ca.CA.IssueBatch.
package batchfile
