package main

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path"
	"sync"
	"time"

	"minica/ca"
)

// shards is the number of db/XX directories: one per first byte of a serial.
const shards = 256

// Fill adds n synthetic valid client records to the database of the CA in
// dir, spread evenly over the 256 db/XX shards, using the given number of
// concurrent writers. Records are issued at now and expire a year later.
// It fails if dir holds no CA or if a record file already exists.
func Fill(dir string, n, workers int, now time.Time) error {
	if n < 0 || workers < 1 {
		return fmt.Errorf("invalid fill: %d records, %d workers", n, workers)
	}
	if _, err := os.Stat(path.Join(dir, "ca.crt")); err != nil {
		return fmt.Errorf("opening CA directory %q: %w", dir, err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("opening CA directory %q: %w", dir, err)
	}
	defer root.Close()
	jobs := make(chan int)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for shard := range jobs {
				if err := fillShard(root, shard, n, now); err != nil {
					errs <- err
					for range jobs { // drain so the producer finishes
					}
					return
				}
			}
		})
	}
	for shard := range shards {
		jobs <- shard
	}
	close(jobs)
	wg.Wait()
	close(errs)
	return errors.Join(collect(errs)...)
}

func collect(errs <-chan error) []error {
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	return all
}

// fillShard writes the records of db/XX for shard XX: records shard,
// shard+256, shard+512, ... below n.
func fillShard(root *os.Root, shard, n int, now time.Time) error {
	dir := path.Join("db", fmt.Sprintf("%02x", shard))
	if err := root.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating %q: %w", dir, err)
	}
	for i := shard; i < n; i += shards {
		rec, err := newRecord(shard, i, now)
		if err != nil {
			return err
		}
		data, _ := json.Marshal(rec) // a ca.Record always marshals
		file := path.Join(dir, rec.Serial+".json")
		if err := writeNew(root, file, append(data, '\n')); err != nil {
			return err
		}
	}
	return nil
}

// newRecord returns record i: a random serial whose first byte is shard.
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

// writeNew creates file with O_EXCL, so that an existing record is never
// overwritten.
func writeNew(root *os.Root, file string, data []byte) error {
	f, err := root.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("creating record %q: %w", file, err)
	}
	_, werr := f.Write(data)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return fmt.Errorf("writing record %q: %w", file, werr)
	}
	return nil
}
