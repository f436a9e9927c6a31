//go:build stdrecordjson

package recordjson

// handWritten is off: with the build tag stdrecordjson every line goes
// through encoding/json, so the tests of every package that reads records
// run on the standard path.
const handWritten = false
