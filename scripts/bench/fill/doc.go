// Command fill adds synthetic revoked certificates to an existing
// minica CA directory, and can write the same revocations as an `openssl ca`
// database, so that scripts/bench/crl.sh compares the two CRL generators on
// the same list without revoking a million certificates one by one.
//
// Usage:
//
//	go run ./scripts/bench/fill -dir CADIR -n RECORDS -revoked K [-index index.txt]
//
// It writes RECORDS client records to db/XX/SERIAL.json, K of them revoked,
// and appends one line per revoked record to db/revoked.log, in the formats
// the ca package documents. Serials are random, revocation times fall in the
// last day, and reasons cycle through keyCompromise, superseded and
// cessationOfOperation. With -index, the K revocations also go to an OpenSSL
// index.txt ("R" lines, the same serials, times and reasons).
//
// No certificate file is written, so `minica check` reports every filled
// record as lacking its certificate. Record files are created with O_EXCL
// and nothing is synced: this is benchmark set-up, not CA state worth
// keeping.
package main
