package main

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path"
	"strings"
	"sync"
	"time"

	"minica/ca"
)

// shards is the number of db/XX directories: one per first byte of a serial.
const shards = 256

// revlogFile is the revocation log, relative to the CA directory.
const revlogFile = "db/revoked.log"

// reasons are given to revoked records in turn.
var reasons = []string{"keyCompromise", "superseded", "cessationOfOperation"}

// Options say what Fill writes.
type Options struct {
	Dir     string    // the CA directory, made by `minica init`
	Records int       // records to add
	Revoked int       // how many of them are revoked, at most Records
	Index   string    // if set, an OpenSSL index.txt to create with the revocations
	Workers int       // concurrent writers, at least 1
	Now     time.Time // issue time of every record; revocations fall in the day before
}

// revEvent is a line of the revocation log, as the ca package writes it.
type revEvent struct {
	Serial    string    `json:"serial"`
	RevokedAt time.Time `json:"revoked_at"`
	Reason    string    `json:"reason"`
	NotAfter  time.Time `json:"not_after"`
}

// shardOut is what one shard adds to the revocation log and the index.
type shardOut struct {
	log, index bytes.Buffer
}

// Fill adds o.Records synthetic client records to the CA in o.Dir, o.Revoked
// of them revoked and listed in the revocation log (and in o.Index). It fails
// if o.Dir holds no CA, if a record file or o.Index already exists, or if the
// counts are out of range.
func Fill(o Options) error {
	if o.Records < 0 || o.Revoked < 0 || o.Revoked > o.Records || o.Workers < 1 {
		return fmt.Errorf("invalid fill: %d records, %d revoked, %d workers", o.Records, o.Revoked, o.Workers)
	}
	if _, err := os.Stat(path.Join(o.Dir, "ca.crt")); err != nil {
		return fmt.Errorf("opening CA directory %q: %w", o.Dir, err)
	}
	root, err := os.OpenRoot(o.Dir)
	if err != nil {
		return fmt.Errorf("opening CA directory %q: %w", o.Dir, err)
	}
	defer root.Close()
	outs := make([]shardOut, shards)
	if err := fillShards(root, o, outs); err != nil {
		return err
	}
	var log, index bytes.Buffer
	for i := range outs {
		log.Write(outs[i].log.Bytes())
		index.Write(outs[i].index.Bytes())
	}
	if err := appendFile(root, revlogFile, log.Bytes()); err != nil {
		return err
	}
	if o.Index == "" {
		return nil
	}
	if err := createFile(o.Index, index.Bytes()); err != nil {
		return err
	}
	return nil
}

// fillShards writes the records of every shard with o.Workers goroutines,
// collecting each shard's log and index lines in outs.
func fillShards(root *os.Root, o Options, outs []shardOut) error {
	jobs := make(chan int)
	errs := make([]error, shards)
	var wg sync.WaitGroup
	for range o.Workers {
		wg.Go(func() {
			for shard := range jobs {
				errs[shard] = fillShard(root, o, shard, &outs[shard])
			}
		})
	}
	for shard := range shards {
		jobs <- shard
	}
	close(jobs)
	wg.Wait()
	return errors.Join(errs...)
}

// fillShard writes the records of db/XX for shard XX: records shard,
// shard+256, shard+512, ... below o.Records; those below o.Revoked are
// revoked.
func fillShard(root *os.Root, o Options, shard int, out *shardOut) error {
	dir := path.Join("db", fmt.Sprintf("%02x", shard))
	if err := root.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating %q: %w", dir, err)
	}
	for i := shard; i < o.Records; i += shards {
		rec, err := newRecord(shard, i, o.Now)
		if err != nil {
			return err
		}
		if i < o.Revoked {
			revokeRecord(rec, i, o.Now)
			writeRevocation(out, rec)
		}
		data, _ := json.Marshal(rec) // a ca.Record always marshals
		if err := createIn(root, path.Join(dir, rec.Serial+".json"), append(data, '\n')); err != nil {
			return err
		}
	}
	return nil
}

// newRecord returns record i: a valid client record with a random serial
// whose first byte is shard.
func newRecord(shard, i int, now time.Time) (*ca.Record, error) {
	var b [16]byte
	var fp [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, fmt.Errorf("reading random serial: %w", err)
	}
	rand.Read(fp[:])
	b[0] = byte(shard)
	b[15] |= 1 // never zero, whatever the shard
	name := fmt.Sprintf("bench-fill-%d", i)
	issued := now.UTC().Truncate(time.Second)
	return &ca.Record{
		Serial:      ca.SerialHex(new(big.Int).SetBytes(b[:])),
		Name:        name,
		Profile:     ca.Client,
		Status:      ca.StatusValid,
		Subject:     "CN=" + name,
		NotBefore:   issued.Add(-ca.Backdate),
		NotAfter:    issued.AddDate(1, 0, 0),
		Fingerprint: hex.EncodeToString(fp[:]),
		IssuedAt:    issued,
	}, nil
}

// revokeRecord marks record i revoked at some second of the day before now.
func revokeRecord(rec *ca.Record, i int, now time.Time) {
	rec.Status = ca.StatusRevoked
	rec.RevokedAt = now.UTC().Truncate(time.Second).Add(-time.Duration(1+i%86400) * time.Second)
	rec.Reason = reasons[i%len(reasons)]
}

// writeRevocation adds a revoked record's log line and index line to out.
func writeRevocation(out *shardOut, rec *ca.Record) {
	line, _ := json.Marshal(revEvent{Serial: rec.Serial, RevokedAt: rec.RevokedAt, Reason: rec.Reason, NotAfter: rec.NotAfter})
	out.log.Write(line)
	out.log.WriteByte('\n')
	// OpenSSL's index.txt: status, expiry, revocation[,reason], serial in
	// upper-case hex, certificate file ("unknown") and subject.
	fmt.Fprintf(&out.index, "R\t%s\t%s,%s\t%s\tunknown\t/%s\n",
		opensslTime(rec.NotAfter), opensslTime(rec.RevokedAt), rec.Reason, strings.ToUpper(rec.Serial), rec.Subject)
}

// opensslTime formats t as index.txt does: UTCTime, YYMMDDHHMMSSZ.
func opensslTime(t time.Time) string { return t.UTC().Format("060102150405Z") }

// createIn creates file in root with O_EXCL, so that an existing record is
// never overwritten.
func createIn(root *os.Root, file string, data []byte) error {
	f, err := root.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("creating %q: %w", file, err)
	}
	return writeClose(f, file, data)
}

// appendFile appends data to file in root, creating it if needed.
func appendFile(root *os.Root, file string, data []byte) error {
	f, err := root.OpenFile(file, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("opening %q: %w", file, err)
	}
	return writeClose(f, file, data)
}

// createFile creates file outside the CA directory, with O_EXCL.
func createFile(file string, data []byte) error {
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("creating %q: %w", file, err)
	}
	return writeClose(f, file, data)
}

func writeClose(f *os.File, file string, data []byte) error {
	_, err := f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing %q: %w", file, err)
	}
	return nil
}
