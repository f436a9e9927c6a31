package ca

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"math/big"
	"os"
	"path"
	"slices"
	"strings"
	"time"
)

// Status is the state of a record in the issuance database.
type Status string

// Record statuses. Expired is never stored: it is derived from NotAfter.
const (
	// StatusPending: the serial is reserved and the certificate may be
	// signed, but issuance has not finished. Check completes or voids it.
	StatusPending Status = "pending"
	StatusValid   Status = "valid"
	StatusRevoked Status = "revoked"
	StatusExpired Status = "expired"
	// StatusVoid: issuance was interrupted before the certificate reached
	// the disk; the serial stays reserved forever.
	StatusVoid Status = "void"
)

// Record describes one certificate the CA signed (or reserved a serial for).
type Record struct {
	Serial      string    `json:"serial"` // 32 lowercase hex digits
	Name        string    `json:"name"`
	Profile     Profile   `json:"profile"`
	Status      Status    `json:"status"`
	Subject     string    `json:"subject,omitempty"` // RFC 4514
	SANs        []string  `json:"sans,omitempty"`    // "dns:..", "ip:..", "email:..", "uri:.."
	NotBefore   time.Time `json:"not_before,omitzero"`
	NotAfter    time.Time `json:"not_after,omitzero"`
	Fingerprint string    `json:"sha256,omitempty"` // of the DER certificate, lowercase hex
	HasKey      bool      `json:"has_key"`          // minica generated and stored the key
	IssuedAt    time.Time `json:"issued_at"`
	RevokedAt   time.Time `json:"revoked_at,omitzero"`
	Reason      string    `json:"reason,omitempty"` // RFC 5280 reason name
	// RenewalOf is the serial of the certificate this one renews, and
	// RenewedBy the serial of its newest successor (see CA.Renew). Records
	// written before renewal existed have neither.
	RenewalOf string `json:"renewal_of,omitempty"`
	RenewedBy string `json:"renewed_by,omitempty"`
}

// StatusAt returns the record's status at time t: StatusExpired for a valid
// certificate past its NotAfter, the stored status otherwise.
func (r *Record) StatusAt(t time.Time) Status {
	if r.Status == StatusValid && t.After(r.NotAfter) {
		return StatusExpired
	}
	return r.Status
}

// ErrNotFound is returned when no record matches a name or serial.
var ErrNotFound = errors.New("no such certificate")

// SerialHex formats a serial number as record files name it.
func SerialHex(n *big.Int) string { return fmt.Sprintf("%032x", n) }

// ParseSerial parses a serial number in hex, in any case, with or without
// colons and a 0x prefix ("5F:3C:..", "5f3c..").
func ParseSerial(s string) (*big.Int, error) {
	h := strings.ReplaceAll(strings.TrimPrefix(strings.ToLower(s), "0x"), ":", "")
	n, ok := new(big.Int).SetString(h, 16)
	if h == "" || !ok || n.Sign() <= 0 || n.BitLen() > 159 {
		return nil, fmt.Errorf("invalid serial %s: want a positive hex number, with or without colons", printable(s))
	}
	return n, nil
}

func recordPath(serial string) string { return path.Join("db", serial[:2], serial+".json") }

func certDir(name string) string { return path.Join("certs", name) }

// CertPath returns the path of a record's certificate, relative to the CA
// directory.
func (r *Record) CertPath() string { return path.Join(certDir(r.Name), r.Serial+".crt") }

// KeyPath returns the path of a record's private key, relative to the CA
// directory; it exists only when HasKey.
func (r *Record) KeyPath() string { return path.Join(certDir(r.Name), r.Serial+".key") }

// ChainPath returns the path of a record's certificate plus CA chain,
// relative to the CA directory.
func (r *Record) ChainPath() string { return path.Join(certDir(r.Name), r.Serial+".chain.pem") }

func encodeRecord(r *Record) []byte {
	b, _ := json.Marshal(r) // a Record always marshals
	return append(b, '\n')
}

// CorruptRecordError is returned for a record file that does not decode.
type CorruptRecordError struct {
	File   string // the path, for messages
	Serial string // from the file name
	Err    error
}

func (e *CorruptRecordError) Error() string {
	return fmt.Sprintf("corrupt record %q: %v", e.File, e.Err)
}

// Unwrap returns the decoding error.
func (e *CorruptRecordError) Unwrap() error { return e.Err }

// currentLine returns the last line of a record file that ends in a
// newline: a record file holds one JSON line per state the record reached
// (issuance appends the completed record to the pending one), and a line
// cut short by a crash is not a state. It returns nil when there is none.
func currentLine(data []byte) []byte {
	data = data[:bytes.LastIndexByte(data, '\n')+1]
	if len(data) == 0 {
		return nil
	}
	return data[bytes.LastIndexByte(data[:len(data)-1], '\n')+1:]
}

func decodeRecord(data []byte, file string) (*Record, error) {
	corrupt := func(err error) error {
		return &CorruptRecordError{File: file, Serial: strings.TrimSuffix(path.Base(file), ".json"), Err: err}
	}
	r, err := decodeRecordJSON(currentLine(data))
	if err != nil {
		return nil, corrupt(err)
	}
	if len(r.Serial) != 32 || path.Base(file) != r.Serial+".json" {
		return nil, corrupt(fmt.Errorf("serial %q does not match the file name", r.Serial))
	}
	if ValidateName(r.Name) != nil {
		return nil, corrupt(fmt.Errorf("invalid name %q", r.Name))
	}
	return r, nil
}

// reserve creates the pending record of a new serial and returns its file
// open for completeRecord; it fails with an error matching fs.ErrExist when
// the serial is taken. It does not sync: every other process sees the
// reservation at once, and after a power loss Check rebuilds a lost or
// unreadable one from the certificate files, which are synced before
// issuance reports success.
func (c *CA) reserve(r *Record) (*os.File, error) {
	if c.db != nil {
		return nil, c.db.reserve(r)
	}
	shard, err := c.shard(r.Serial)
	if err != nil {
		return nil, err
	}
	defer shard.Close()
	return shard.CreateExclusiveLazily(r.Serial+".json", encodeRecord(r), 0o644)
}

// shard opens (creating it when new) the database directory that holds a
// serial's record.
func (c *CA) shard(serial string) (*Dir, error) {
	shard, _, err := c.dir.MkdirSub(path.Dir(recordPath(serial)))
	return shard, err
}

// putRecord replaces an existing record atomically and durably.
func (c *CA) putRecord(r *Record) error {
	if c.db != nil {
		return c.db.putRecord(r)
	}
	return c.dir.WriteAtomic(recordPath(r.Serial), encodeRecord(r), 0o644)
}

// completeRecord appends the completed record to the pending one in f, the
// file reserve returned, without a sync: if a power loss undoes it, Check
// completes the record again from the synced certificate. Appending keeps
// the record's inode: replacing it would free one per certificate, and
// ext4 without a journal then skips every recently freed inode when it
// allocates the next, a cost that grows with the issuance rate.
func (c *CA) completeRecord(f *os.File, r *Record) error {
	if c.db != nil {
		return c.db.putRecord(r)
	}
	if _, err := f.Write(encodeRecord(r)); err != nil {
		return fmt.Errorf("writing %q: %w", c.dir.Join(recordPath(r.Serial)), err)
	}
	return nil
}

// Record returns the record of a serial number, or an error matching
// ErrNotFound.
func (c *CA) Record(serial *big.Int) (*Record, error) {
	hex := SerialHex(serial)
	if len(hex) != 32 {
		return nil, fmt.Errorf("serial %x: %w", serial, ErrNotFound)
	}
	return c.recordHex(hex)
}

// recordHex is Record for a serial as record files name it.
func (c *CA) recordHex(hex string) (*Record, error) {
	if c.db != nil {
		return c.db.record(hex)
	}
	file := recordPath(hex)
	data, err := c.dir.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("serial %s: %w", hex, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("reading record %q: %w", c.dir.Join(file), err)
	}
	return decodeRecord(data, c.dir.Join(file))
}

// RecordsByName returns the records of every certificate issued under name,
// oldest first; serials reserved for it that never became a certificate
// (void) are left out. The records are found through the name index (see
// nameIndexDir), so that it costs one file read per certificate of the
// name, whatever the database size; in a CA directory that has no index
// yet it reads every record.
func (c *CA) RecordsByName(name string) ([]*Record, error) {
	if err := ValidateName(name); err != nil {
		return nil, err
	}
	if c.db != nil {
		return c.db.recordsByName(name)
	}
	serials, indexed, err := c.indexedSerials(name)
	if err != nil {
		return nil, err
	}
	var recs []*Record
	if !indexed {
		if recs, err = c.scanByName(name); err != nil {
			return nil, err
		}
	}
	for _, serial := range serials {
		r, err := c.recordHex(serial)
		if errors.Is(err, ErrNotFound) {
			continue // Check removed an unreadable reservation
		}
		if err != nil {
			return nil, err
		}
		if r.Name == name {
			recs = append(recs, r)
		}
	}
	recs = slices.DeleteFunc(recs, func(r *Record) bool { return r.Status == StatusVoid })
	sortByIssued(recs)
	return recs, nil
}

func sortByIssued(recs []*Record) {
	slices.SortFunc(recs, func(a, b *Record) int {
		if c := a.IssuedAt.Compare(b.IssuedAt); c != 0 {
			return c
		}
		return strings.Compare(a.Serial, b.Serial)
	})
}

// Records iterates over every record in the database, one shard directory
// at a time, so that a million records stream in constant memory. Records
// come in serial order. A record that does not decode is yielded as a
// *CorruptRecordError with a nil record, and iteration goes on if the
// consumer does; any other error ends it.
func (c *CA) Records() iter.Seq2[*Record, error] {
	if c.db != nil {
		return c.db.records()
	}
	return func(yield func(*Record, error) bool) {
		shards, err := fs.ReadDir(c.dir.root.FS(), "db")
		if err != nil {
			yield(nil, fmt.Errorf("listing %q: %w", c.dir.Join("db"), err))
			return
		}
		for _, shard := range shards {
			if !shard.IsDir() || isTemp(shard.Name()) || shard.Name() == path.Base(nameIndexDir) || shard.Name() == path.Base(enrollDir) {
				continue
			}
			if !c.shardRecords(path.Join("db", shard.Name()), yield) {
				return
			}
		}
	}
}

func (c *CA) shardRecords(dir string, yield func(*Record, error) bool) bool {
	// One os.Root per shard: each record then costs a single openat
	// instead of one per path component.
	shard, err := c.dir.root.OpenRoot(dir)
	if err != nil {
		return yield(nil, fmt.Errorf("opening %q: %w", c.dir.Join(dir), err))
	}
	defer shard.Close()
	files, err := openShardFiles(shard)
	if err != nil {
		return yield(nil, fmt.Errorf("opening %q: %w", c.dir.Join(dir), err))
	}
	defer files.close()
	names, err := files.names()
	if err != nil {
		return yield(nil, fmt.Errorf("listing %q: %w", c.dir.Join(dir), err))
	}
	buf := make([]byte, 0, 4096)
	for _, name := range names {
		if isTemp(name) || !strings.HasSuffix(name, ".json") {
			continue
		}
		file := c.dir.Join(path.Join(dir, name))
		buf, err = files.read(name, buf[:0])
		if err != nil {
			return yield(nil, fmt.Errorf("reading record %q: %w", file, err))
		}
		r, err := decodeRecord(buf, file)
		if !yield(r, err) {
			return false
		}
	}
	return true
}

// readAppend appends what is left of r to buf, reusing its capacity.
func readAppend(r io.Reader, buf []byte) ([]byte, error) {
	for {
		buf = growBuf(buf)
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// growBuf makes room in buf for more bytes.
func growBuf(buf []byte) []byte {
	if len(buf) == cap(buf) {
		buf = append(buf, 0)[:len(buf)]
	}
	return buf
}
