package ca

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/asn1"
	"errors"
	"fmt"
	"io"
	"iter"
	"math/big"
	"os"
	"path"
	"runtime"
	"slices"
	"sync"
	"time"

	"minica/formats"
)

// BatchGroupSize is how many certificates IssueBatch makes durable together
// by default: one sync (see syncGroup) per group instead of one per
// certificate. A crash loses at most the group being written, whose
// certificates were not yet reported.
const BatchGroupSize = 64

// BatchOptions tune IssueBatch.
type BatchOptions struct {
	// GroupSize is the number of certificates per durability group; 0 means
	// BatchGroupSize, 1 makes every certificate durable on its own.
	GroupSize int
	// Workers is how many certificates of a group are made at once; 0
	// means one per CPU, at most 4.
	Workers int
}

// BatchResult is one certificate of a batch, reported by IssueBatch once it
// is durable.
type BatchResult struct {
	// Index is the request's position in the batch, from 0.
	Index int
	// Request is the request as issued, with its defaults filled in.
	Request Request
	Issued  *Issued
}

// CheckRequest validates req as Issue will, without generating a key or
// writing anything: its fields, its validity against the CA's, the name
// constraints of every CA of its chain, and the certificates already issued
// under its name (a root issues none: ErrRootCA). The caller must hold the
// lock, so that the answer stays true until it issues.
//
// A name that has a valid certificate with the identity req asks for (the
// same profile, subject and SANs) gives that record and no error: an
// earlier run of the same batch issued it, and a re-run skips it. A valid
// certificate with another identity is a *NameTakenError, unless req.Force.
// An issuance of the name that was interrupted (a pending record) counts as
// issued when its certificate reached the disk whole (see FinishInterrupted,
// which then completes it) and as absent otherwise.
func (c *CA) CheckRequest(req Request) (*Record, error) {
	if c.IsRoot() {
		return nil, ErrRootCA
	}
	uris, err := req.normalize(c.Settings)
	if err != nil {
		return nil, err
	}
	now := c.Now().UTC().Truncate(time.Second)
	if _, _, err := c.validity(now, req.Validity); err != nil {
		return nil, err
	}
	if err := c.checkCertDir(req.Name); err != nil {
		return nil, err
	}
	pub, err := checkingKey(req.PublicKey)
	if err != nil {
		return nil, err
	}
	tmpl, err := req.template(nil, pub, uris, now, now, c.Settings)
	if err != nil {
		return nil, err
	}
	fitServerCommonName(c.Cert, tmpl)
	if err := c.checkChainConstraints(tmpl); err != nil {
		return nil, err
	}
	if req.Force {
		return nil, nil
	}
	recs, err := c.RecordsByName(req.Name)
	if err != nil {
		return nil, err
	}
	subject, sans, err := templateIdentity(tmpl)
	if err != nil {
		return nil, err
	}
	var taken *Record
	for _, r := range recs {
		if r.Status == StatusPending {
			if r = c.pendingAsIssued(r); r == nil {
				continue
			}
		}
		if r.StatusAt(now) != StatusValid {
			continue
		}
		if r.Profile == req.Profile && r.Subject == subject && sameSet(r.SANs, sans) {
			return r, nil
		}
		taken = r
	}
	if taken != nil {
		return nil, &NameTakenError{Name: req.Name, Serial: taken.Serial}
	}
	return nil, nil
}

// checkingKey returns pub, checked, or a fixed key that stands in for the
// one IssueBatch will generate: the template needs a public key only for
// the subject key identifier, which identities do not compare.
func checkingKey(pub crypto.PublicKey) (crypto.PublicKey, error) {
	if pub != nil {
		return pub, CheckPublicKey(pub)
	}
	k, err := placeholderKey()
	if err != nil {
		return nil, err
	}
	return k.Public(), nil
}

var placeholderKey = sync.OnceValues(func() (*ecdsa.PrivateKey, error) {
	return ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
})

// templateIdentity returns the subject (RFC 4514) and SANs that a
// certificate made from tmpl will have, as its record will list them.
func templateIdentity(tmpl *x509.Certificate) (string, []string, error) {
	raw, err := asn1.Marshal(tmpl.Subject.ToRDNSequence())
	if err != nil {
		return "", nil, fmt.Errorf("encoding subject: %w", err)
	}
	subject, err := formats.DistinguishedName(raw)
	if err != nil {
		return "", nil, err
	}
	return subject, SANs(tmpl), nil
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// pendingAsIssued returns the record that finishing the interrupted
// issuance rec would complete, or nil when it would be voided. It reads
// only.
func (c *CA) pendingAsIssued(rec *Record) *Record {
	cert, err := c.readCert(rec.CertPath())
	if err != nil || SerialHex(cert.SerialNumber) != rec.Serial {
		if cert, err = c.firstCert(rec.ChainPath()); err != nil || SerialHex(cert.SerialNumber) != rec.Serial {
			return nil
		}
	}
	done := *rec
	fillRecord(&done, cert)
	return &done
}

// FinishInterrupted completes or voids, as Check does, every interrupted
// issuance (pending record) of name, revokes a successor it completes
// whose line is revoked (see completeLines), and points the name's
// current.* links at its newest certificate where they point elsewhere;
// it says what it did, one sentence each.
// Under the lock a pending record is always an interrupted one, so a batch
// that is run again calls it for its names before it issues. Problems
// (a certificate whose key did not reach the disk) are returned as
// sentences too, after the repairs.
func (c *CA) FinishInterrupted(name string) ([]string, error) {
	recs, err := c.RecordsByName(name)
	if err != nil {
		return nil, err
	}
	rep := &CheckReport{}
	renewed := false
	for _, rec := range recs {
		if rec.Status != StatusPending {
			continue
		}
		if err := c.finishPending(rep, rec); err != nil {
			return nil, err
		}
		renewed = renewed || (rec.RenewalOf != "" && rec.Status == StatusValid)
	}
	// A successor completed now joins its line, which may be revoked.
	if renewed {
		if err := c.completeLines(rep, []string{name}); err != nil {
			return nil, err
		}
	}
	if len(recs) > 0 {
		if err := c.checkCurrentOf(rep, name); err != nil {
			return nil, err
		}
	}
	return append(rep.Repaired, rep.Problems...), nil
}

// IssueBatch issues a certificate for every request of reqs, in order, with
// signer (the CA key), and calls report for each one after it is durable.
// The caller must hold the lock for the whole batch, and should have
// checked every request with CheckRequest first (IssueBatch checks each
// again, as Issue does).
//
// Certificates are written in groups of o.GroupSize: each is issued as
// Issue does (its serial reserved and its name indexed before signing, its
// key, chain and certificate written into certs/NAME with O_EXCL), but
// without a sync of its own; when the group is written its files are made
// durable together (see syncGroup), and only then are their records
// completed, their current.* links moved and report called, in request
// order. A crash before the sync leaves pending records that Check (or
// FinishInterrupted) completes or voids; one after it, pending records
// whose certificates Check completes. So every certificate on disk has a
// record, and every certificate reported survives a power loss.
//
// The certificates of a group are made by o.Workers goroutines (keys
// generated and files written concurrently; calls to signer one at a time,
// so any signer will do). A name is issued at most once per group.
//
// It stops after the group in which a request, the disk or report failed:
// the certificates of that group that were written are still made durable
// and complete, and reported unless report failed, and the first error is
// returned, naming the request by its position. It returns how many
// certificates were reported.
func (c *CA) IssueBatch(signer crypto.Signer, reqs iter.Seq[Request], o BatchOptions, report func(BatchResult) error) (int, error) {
	size := o.GroupSize
	if size <= 0 {
		size = BatchGroupSize
	}
	workers := o.Workers
	if workers <= 0 {
		workers = min(runtime.GOMAXPROCS(0), 4)
	}
	signer = &serialSigner{s: signer}
	next, stop := iter.Pull(reqs)
	defer stop()
	g := &batchGroup{c: c, workers: workers}
	defer g.abandon()
	reported, index := 0, 0
	var held *Request // the request that ended the last group: its name was in it
	for {
		var todo []Request
		names := make(map[string]bool)
		for len(todo) < size {
			var req Request
			if held != nil {
				req, held = *held, nil
			} else {
				r, ok := next()
				if !ok {
					break
				}
				req = r
			}
			if names[req.Name] {
				held = &req
				break
			}
			names[req.Name] = true
			todo = append(todo, req)
		}
		if len(todo) == 0 {
			return reported, nil
		}
		written, errs := c.writeGroup(signer, todo, workers)
		var issueErr error
		for i, p := range written {
			if p == nil {
				if issueErr == nil {
					issueErr = fmt.Errorf("request %d (%s): %w", index+i+1, printable(todo[i].Name), errs[i])
				}
				continue
			}
			p.index = index + i
			g.pending = append(g.pending, p)
		}
		index += len(todo)
		n, err := g.commit(report)
		reported += n
		if err := errors.Join(issueErr, err); err != nil {
			return reported, err
		}
	}
}

// writeGroup writes the certificates of reqs with up to workers goroutines;
// it returns, by request, the certificate written or why it was not. The
// invariant is the one of a single issuance: a serial's pending record is
// reserved before its certificate is signed. The workers prepare every
// request (validation and the key), the store reserves the serials of
// those that passed at once (on PostgreSQL one transaction, where each
// commit waits for the WAL to reach the disk), and the workers sign and
// write their certificates.
func (c *CA) writeGroup(signer crypto.Signer, reqs []Request, workers int) ([]*batchCert, []error) {
	written := make([]*batchCert, len(reqs))
	errs := make([]error, len(reqs))
	preps := make([]*prepared, len(reqs))
	inParallel(len(reqs), workers, func(i int) { preps[i], errs[i] = c.prepare(reqs[i]) })
	var todo []int
	for i := range reqs {
		if errs[i] == nil {
			todo = append(todo, i)
		}
	}
	if len(todo) == 0 {
		return written, errs
	}
	recs, res, err := c.reserveGroup(reqs, preps, todo)
	if err != nil {
		for _, i := range todo {
			errs[i] = err
		}
		return written, errs
	}
	inParallel(len(todo), workers, func(j int) {
		i := todo[j]
		written[i], errs[i] = c.signBatchCert(signer, reqs[i], preps[i], recs[j], res[j])
	})
	return written, errs
}

// reserveGroup reserves a random serial for each request of todo, in
// one call of the store.
func (c *CA) reserveGroup(reqs []Request, preps []*prepared, todo []int) ([]*Record, []reservation, error) {
	pending := func(j int, serial *big.Int) *Record { return pendingRecord(reqs[todo[j]], preps[todo[j]].now, serial) }
	return reserveDrawn(len(todo), pending, c.db.ReserveGroup)
}

// inParallel runs fn(0) to fn(n-1) on at most workers goroutines.
func inParallel(n, workers int, fn func(i int)) {
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range min(workers, n) {
		wg.Go(func() {
			for i := range jobs {
				fn(i)
			}
		})
	}
	for i := range n {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
}

// serialSigner makes a signer's calls one at a time: a token or an agent
// may not take concurrent ones, and signing is a small part of the work.
type serialSigner struct {
	mu sync.Mutex
	s  crypto.Signer
}

func (s *serialSigner) Public() crypto.PublicKey { return s.s.Public() }

func (s *serialSigner) Sign(rand io.Reader, digest []byte, opts crypto.SignerOpts) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.s.Sign(rand, digest, opts)
}

// batchCert is a certificate of a batch, written but not yet durable.
type batchCert struct {
	index  int
	req    Request
	rec    *Record
	res    reservation // of the pending record
	cert   *x509.Certificate
	key    crypto.Signer
	dir    *Dir // certs/NAME
	newDir bool // certs/NAME was created for it
	files  []*os.File
}

// signBatchCert signs the certificate of a reserved serial and writes its
// files, not synced; on failure the serial is voided.
func (c *CA) signBatchCert(signer crypto.Signer, req Request, prep *prepared, rec *Record, res reservation) (*batchCert, error) {
	tmpl, pub, key := prep.tmpl, prep.pub, prep.key
	var err error
	p := &batchCert{req: req, rec: rec, res: res, key: key}
	tmpl.SerialNumber, _ = ParseSerial(rec.Serial)
	if p.cert, err = c.sign(tmpl, pub, signer); err != nil {
		res.Release()
		return nil, c.void(rec, err)
	}
	if err := p.write(c); err != nil {
		res.Release()
		return nil, c.void(rec, err)
	}
	return p, nil
}

// write creates the key (when there is one), the chain and the certificate
// in certs/NAME, in that order, with O_EXCL and without a sync; the files
// stay open for the group's sync. On failure it removes what it created.
func (p *batchCert) write(c *CA) error {
	var files []NewFile
	if p.key != nil {
		keyPEM, err := formats.MarshalPrivateKeyPEM(p.key, nil)
		if err != nil {
			return err
		}
		files = append(files, NewFile{Name: path.Base(p.rec.KeyPath()), Data: keyPEM, Perm: 0o600})
	}
	files = append(files,
		NewFile{Name: path.Base(p.rec.ChainPath()), Data: c.chainPEM(p.cert), Perm: 0o644},
		NewFile{Name: path.Base(p.rec.CertPath()), Data: pemCert(p.cert), Perm: 0o644})
	dir, created, err := c.dir.MkdirSub(certDir(p.rec.Name))
	if err != nil {
		return err
	}
	p.dir, p.newDir = dir, created
	for _, nf := range files {
		f, err := dir.Root().OpenFile(nf.Name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, nf.Perm)
		if err != nil {
			err = fmt.Errorf("creating %q: %w", dir.Join(nf.Name), err)
		} else {
			p.files = append(p.files, f)
			if _, werr := f.Write(nf.Data); werr != nil {
				err = fmt.Errorf("writing %q: %w", dir.Join(nf.Name), werr)
			}
		}
		if err != nil {
			p.closeFiles()
			for _, nf := range files[:len(p.files)] {
				dir.Root().Remove(nf.Name)
			}
			p.release()
			return err
		}
	}
	return nil
}

func (p *batchCert) closeFiles() error {
	var err error
	for _, f := range p.files {
		if cerr := f.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("closing %q: %w", p.dir.Join(path.Base(f.Name())), cerr)
		}
	}
	p.files = nil
	return err
}

func (p *batchCert) release() {
	if p.dir != nil {
		p.dir.Close()
		p.dir = nil
	}
}

// batchGroup is the certificates written since the last sync.
type batchGroup struct {
	c       *CA
	workers int
	pending []*batchCert
}

// commit makes the group durable, completes its records, moves its names'
// current.* links and reports each certificate. It returns how many it
// reported.
func (g *batchGroup) commit(report func(BatchResult) error) (int, error) {
	if len(g.pending) == 0 {
		return 0, nil
	}
	if err := g.c.syncGroup(g.pending); err != nil {
		return 0, err
	}
	// Completing the records and moving the links of different names
	// are independent: they run on the workers, the reports in order.
	group := g.pending
	g.pending = nil
	if err := g.c.completeGroup(group); err != nil {
		g.pending = group
		return 0, err
	}
	errs := make([]error, len(group))
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range min(g.workers, len(group)) {
		wg.Go(func() {
			for i := range jobs {
				errs[i] = g.c.completeBatchCert(group[i])
			}
		})
	}
	for i := range group {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	for i, p := range group {
		if errs[i] != nil {
			return i, errs[i]
		}
		if err := report(BatchResult{Index: p.index, Request: p.req, Issued: g.c.issuedOf(p.rec, p.cert, p.key)}); err != nil {
			return i, err
		}
	}
	return len(group), nil
}

// completeBatchCert points the name's current.* links of a durable,
// completed certificate at it and, for a renewal, links its predecessor
// to it.
func (c *CA) completeBatchCert(p *batchCert) error {
	defer p.release()
	if err := linkCurrentIn(p.dir, p.rec, p.newDir); err != nil {
		return fmt.Errorf("%w: serial %s is issued and recorded, but not yet the current certificate of its name: %w", ErrIssuanceIncomplete, p.rec.Serial, err)
	}
	if p.req.renews != nil {
		return c.linkTo(p.req.renews, p.rec)
	}
	return nil
}

// abandon releases what a failed commit left; the records stay pending
// for Check.
func (g *batchGroup) abandon() {
	for _, p := range g.pending {
		p.closeFiles()
		p.res.Release()
		p.release()
	}
	g.pending = nil
}

// syncGroup makes the files of a group durable, with their directories
// (certs/NAME, and certs/ for new names), and closes them.
func (c *CA) syncGroup(group []*batchCert) error {
	var files []*os.File
	var dirs []*Dir
	newNames := false
	for _, p := range group {
		files = append(files, p.files...)
		dirs = append(dirs, p.dir)
		newNames = newNames || p.newDir
	}
	done, err := c.noSync, error(nil)
	if !done && !c.syncEach {
		done, err = c.dir.SyncFS()
	}
	if !done {
		err = c.syncFiles(files, dirs, newNames)
	}
	for _, p := range group {
		err = errors.Join(err, p.closeFiles())
	}
	return err
}

// syncFiles fsyncs files and the directories dirs (and certs/ when names
// are new), a few at a time concurrently, so that the disk's flushes
// overlap.
func (c *CA) syncFiles(files []*os.File, dirs []*Dir, certsDir bool) error {
	jobs := make(chan func() error)
	errs := make(chan error, 1)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for job := range jobs {
				if err := job(); err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			}
		}()
	}
	for _, f := range files {
		jobs <- func() error {
			if err := f.Sync(); err != nil {
				return fmt.Errorf("syncing %q: %w", f.Name(), err)
			}
			return nil
		}
	}
	seen := make(map[*Dir]bool)
	for _, d := range dirs {
		if !seen[d] {
			seen[d] = true
			jobs <- func() error { return d.SyncDir(".") }
		}
	}
	if certsDir {
		jobs <- func() error { return c.dir.SyncDir("certs") }
	}
	close(jobs)
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

// completeGroup completes the records of a durable group at once: on
// PostgreSQL in one transaction, where one commit per record would cost a
// WAL flush each.
func (c *CA) completeGroup(group []*batchCert) error {
	recs := make([]*Record, len(group))
	res := make([]reservation, len(group))
	for i, p := range group {
		fillRecord(p.rec, p.cert)
		recs[i], res[i] = p.rec, p.res
	}
	if err := c.db.CompleteGroup(res, recs); err != nil {
		return fmt.Errorf("%w: %d certificates are signed, but completing their records failed: %w", ErrIssuanceIncomplete, len(recs), err)
	}
	return nil
}
