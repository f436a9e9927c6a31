//go:build !stdrecordjson

package recordjson

// handWritten sends the lines in store.EncodeRecord's exact form through
// the hand-written path; the build tag stdrecordjson turns it off.
const handWritten = true
