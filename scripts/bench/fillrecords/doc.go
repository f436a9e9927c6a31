// Command fillrecords adds synthetic records to the issuance database of an
// existing minica CA directory, so that benchmarks can measure issuance and
// listing against a large database without signing a million certificates.
//
// Usage:
//
//	go run ./scripts/bench/fillrecords -dir CADIR -n 1000000
//
// Each record is a valid client record named bench-fill-I with a random
// serial, written to db/XX/SERIAL.json as the ca package lays it out (see
// the ca package documentation). No certificate file is written, so
// `minica list` accepts the directory but `minica check` reports every
// filled record as lacking its certificate. Files are created with O_EXCL
// and not synced: this is benchmark set-up, not CA state worth keeping.
package main
