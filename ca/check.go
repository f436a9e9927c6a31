package ca

import (
	"crypto"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
	"time"

	"minica/formats"
	"minica/revoke"
)

// CheckReport is what Check found and did.
type CheckReport struct {
	Records  int      // records in the database after repairs
	Repaired []string // what was repaired, one sentence each
	Problems []string // what is wrong and could not be repaired
	// NoCRL is set when the store holds no readable CRL of the CA (one of
	// Problems says why); publishing one is the remedy.
	NoCRL bool
}

// CheckOptions are the inputs of CheckWith.
type CheckOptions struct {
	// Signer, if set, is called for the CA key when the published CRL lacks
	// revocations that the revocation log holds; a CRL is then published.
	// Without it, or when it fails, they are reported as a problem.
	Signer func() (crypto.Signer, error)
	// Reconcile are CRLs of the CA known outside the store (copies that
	// proxies or replicas hold): revocations they list and the store lost
	// (a restored backup) are re-applied (see reconcile.go).
	Reconcile []ReconcileSource
}

// fix notes a repair.
func (r *CheckReport) fix(s string) { r.Repaired = append(r.Repaired, s) }

// problem notes what could not be repaired.
func (r *CheckReport) problem(s string) { r.Problems = append(r.Problems, s) }

// Check is CheckWith without a signer: it reports revocations missing from
// the CRL but cannot publish them.
func (c *CA) Check() (*CheckReport, error) { return c.CheckWith(CheckOptions{}) }

// CheckWith verifies the CA directory and repairs what an interrupted
// issuance, revocation or publish leaves: it removes temporary files,
// completes pending records whose certificate reached the disk, voids the
// others, recreates the record of any certificate found without one,
// revokes the certificates renewed from one revoked for a reason that
// revokes the line (RevokesLine) that a crash left valid, points
// each name's current.* links at its newest certificate, makes
// crl.pem and crl.der hold the same CRL (the later one) and, on an
// intermediate, crl-chain.pem hold them and the root's, and publishes a
// CRL when the published one lacks revocations of the log and o.Signer
// gives the CA key. It never deletes a record or a certificate. The caller
// must hold the lock.
func (c *CA) CheckWith(o CheckOptions) (*CheckReport, error) {
	rep := &CheckReport{}
	if c.keyURI == nil {
		if _, err := c.readKeyFile(); err != nil {
			rep.Problems = append(rep.Problems, err.Error())
		}
	}
	if err := c.checkCerts(rep); err != nil {
		return nil, err
	}
	lines, err := c.checkRecords(rep)
	if err != nil {
		return nil, err
	}
	if err := c.db.Reindex(); err != nil {
		return nil, err
	}
	if err := c.completeLines(rep, lines); err != nil {
		return nil, err
	}
	if err := c.checkCurrent(rep); err != nil {
		return nil, err
	}
	if err := c.reconcile(rep, o.Reconcile); err != nil {
		return nil, err
	}
	crl, err := c.db.CheckCRL(rep.fix, rep.problem)
	if err != nil {
		return nil, err
	}
	rep.NoCRL = crl == nil
	if err := c.checkCRLChain(rep); err != nil {
		return nil, err
	}
	if crl != nil {
		if err := c.checkUnpublished(rep, c.WithCurrentDelta(crl), o.Signer); err != nil {
			return nil, err
		}
	}
	if err := c.removeTemps("."); err != nil {
		return nil, err
	}
	return rep, nil
}

// checkUnpublished reports the revocations of the log that crl lacks, and
// publishes a CRL that lists them when signer gives the CA key.
func (c *CA) checkUnpublished(rep *CheckReport, crl *revoke.CRL, signer func() (crypto.Signer, error)) error {
	serials, err := c.Unpublished(crl)
	if err != nil || len(serials) == 0 {
		return nil // an unreadable log is reported by checkRecords
	}
	count, list := revocations(len(serials)), serialList(serials)
	if signer == nil {
		rep.Problems = append(rep.Problems, fmt.Sprintf("%s not yet on the CRL (serial %s): publish them with minica crl", count, list))
		return nil
	}
	s, err := signer()
	var info *CRLInfo
	if err == nil {
		info, err = c.PublishCRL(s, 0)
	}
	if err != nil {
		rep.Problems = append(rep.Problems, fmt.Sprintf("%s not yet on the CRL (serial %s), and publishing failed: %v", count, list, err))
		return nil
	}
	rep.Repaired = append(rep.Repaired, fmt.Sprintf("published CRL %s with the %s it lacked (serial %s)", info.Number, count, list))
	return nil
}

// revocations says "1 revocation" or "N revocations".
func revocations(n int) string {
	if n == 1 {
		return "1 revocation"
	}
	return fmt.Sprintf("%d revocations", n)
}

// serialList joins the first few serials, saying how many more there are.
func serialList(serials []string) string {
	const most = 5
	if len(serials) <= most {
		return strings.Join(serials, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(serials[:most], ", "), len(serials)-most)
}

// checkCerts walks certs/NAME/ directories: temp files go, and a
// certificate without a record gets one.
func (c *CA) checkCerts(rep *CheckReport) error {
	names, err := fs.ReadDir(c.dir.Root().FS(), "certs")
	if err != nil {
		return fmt.Errorf("listing %q: %w", c.dir.Join("certs"), err)
	}
	for _, n := range names {
		dir := path.Join("certs", n.Name())
		if !n.IsDir() || ValidateName(n.Name()) != nil {
			rep.Problems = append(rep.Problems, fmt.Sprintf("unexpected entry %q", c.dir.Join(dir)))
			continue
		}
		if err := c.removeTemps(dir); err != nil {
			return err
		}
		files, err := fs.ReadDir(c.dir.Root().FS(), dir)
		if err != nil {
			return fmt.Errorf("listing %q: %w", c.dir.Join(dir), err)
		}
		for _, f := range files {
			if serial, ok := strings.CutSuffix(f.Name(), ".crt"); ok && !isCurrentLink(f.Name()) {
				if err := c.checkCert(rep, n.Name(), serial); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func (c *CA) checkCert(rep *CheckReport, name, serialHex string) error {
	file := path.Join("certs", name, serialHex+".crt")
	cert, err := c.readCert(file)
	if err != nil || SerialHex(cert.SerialNumber) != serialHex {
		if serial, perr := ParseSerial(serialHex); perr == nil {
			if rec, rerr := c.Record(serial); rerr == nil && rec.Status == StatusPending {
				return nil // an interrupted write: the record pass finishes it
			}
		}
		rep.Problems = append(rep.Problems, fmt.Sprintf("certificate %q is unreadable or does not match its file name", c.dir.Join(file)))
		return nil
	}
	_, err = c.Record(cert.SerialNumber)
	if !errors.Is(err, ErrNotFound) {
		return nil // the record pass checks existing records
	}
	rec := &Record{Serial: serialHex, Name: name, Profile: profileOf(cert), IssuedAt: cert.NotBefore.Add(Backdate).UTC()}
	_, keyErr := c.dir.Stat(rec.KeyPath())
	rec.HasKey = keyErr == nil
	fillRecord(rec, cert)
	res, err := c.db.Reserve(rec)
	if err != nil {
		return fmt.Errorf("recreating record %s: %w", serialHex, err)
	}
	res.Release()
	rep.Repaired = append(rep.Repaired, fmt.Sprintf("recreated the missing record of %s (serial %s)", name, serialHex))
	return nil
}

func (c *CA) readCert(file string) (*x509.Certificate, error) {
	data, err := c.dir.ReadFile(file)
	if err != nil {
		return nil, err
	}
	certs, err := parseCertsPEM(data)
	if err != nil || len(certs) != 1 {
		return nil, fmt.Errorf("want one PEM certificate in %q", c.dir.Join(file))
	}
	return certs[0], nil
}

// checkRecords finishes or voids pending records and counts the rest. It
// returns the names that have both a certificate revoked for a reason that
// revokes the line and a renewed one: those completeLines looks at.
func (c *CA) checkRecords(rep *CheckReport) ([]string, error) {
	if err := c.db.Repair(rep.fix, rep.problem); err != nil {
		return nil, err
	}
	events, err := c.latestRevEvents()
	if err != nil {
		rep.Problems = append(rep.Problems, err.Error())
		return nil, nil
	}
	latest := make(map[string]revEvent, len(events))
	for _, ev := range events {
		latest[ev.Serial] = ev
	}
	links := renewalLinks{}
	lineNames, renewedNames := map[string]bool{}, map[string]bool{}
	for rec, err := range c.Records() {
		var corrupt *CorruptRecordError
		if errors.As(err, &corrupt) {
			if rec, err = c.rebuildRecord(rep, corrupt); err != nil {
				return nil, err
			}
			if rec == nil {
				continue
			}
		} else if err != nil {
			rep.Problems = append(rep.Problems, err.Error())
			return nil, nil
		}
		rep.Records++
		if err := c.checkRecord(rep, rec); err != nil {
			return nil, err
		}
		ev, logged := latest[rec.Serial]
		if err := c.reconcileRevocation(rep, rec, ev, logged); err != nil {
			return nil, err
		}
		links.add(rec)
		if _, ok := heldLineReason(rec); ok {
			lineNames[rec.Name] = true
		}
		if rec.RenewalOf != "" {
			renewedNames[rec.Name] = true
		}
	}
	var lines []string
	for name := range lineNames {
		if renewedNames[name] {
			lines = append(lines, name)
		}
	}
	slices.Sort(lines)
	return lines, c.repairRenewalLinks(rep, links)
}

// rebuildRecord replaces an unreadable record (what a power loss can make of
// a reservation or a completion, which are not synced) from its certificate
// file; the revocation log then restores its revocation, if any. With no
// certificate file the record was a reservation that never produced a
// certificate, and it is removed. It returns the rebuilt record, or nil.
func (c *CA) rebuildRecord(rep *CheckReport, corrupt *CorruptRecordError) (*Record, error) {
	matches, _ := fs.Glob(c.dir.Root().FS(), path.Join("certs", "*", corrupt.Serial+".crt"))
	for _, file := range matches {
		cert, err := c.readCert(file)
		if err != nil || SerialHex(cert.SerialNumber) != corrupt.Serial {
			continue
		}
		name := path.Base(path.Dir(file))
		rec := &Record{Serial: corrupt.Serial, Name: name, Profile: profileOf(cert), IssuedAt: cert.NotBefore.Add(Backdate).UTC()}
		_, keyErr := c.dir.Stat(rec.KeyPath())
		rec.HasKey = keyErr == nil
		fillRecord(rec, cert)
		if err := c.putRecord(rec); err != nil {
			return nil, err
		}
		rep.Repaired = append(rep.Repaired, fmt.Sprintf("rebuilt the unreadable record of %s (serial %s) from its certificate", name, rec.Serial))
		return rec, nil
	}
	return nil, c.db.DropUnreadable(corrupt, rep.fix, rep.problem)
}

// reconcileRevocation makes a record agree with the revocation log, which
// is written first and so wins; a revoked record missing from the log is
// added to it.
func (c *CA) reconcileRevocation(rep *CheckReport, rec *Record, ev revEvent, logged bool) error {
	revoked := rec.Status == StatusRevoked
	switch {
	case logged && !ev.Lifted && (!revoked || rec.Reason != ev.Reason):
		rec.Status, rec.RevokedAt, rec.Reason = StatusRevoked, ev.RevokedAt, ev.Reason
	case logged && ev.Lifted && revoked:
		rec.Status, rec.RevokedAt, rec.Reason = StatusValid, time.Time{}, ""
	case !logged && revoked:
		if err := c.appendRevEvent(eventOf(rec)); err != nil {
			return err
		}
		rep.Repaired = append(rep.Repaired, fmt.Sprintf("added the revocation of %s (serial %s) to the revocation log", rec.Name, rec.Serial))
		return nil
	default:
		return nil
	}
	if err := c.putRecord(rec); err != nil {
		return err
	}
	rep.Repaired = append(rep.Repaired, fmt.Sprintf("completed the interrupted revocation change of %s (serial %s)", rec.Name, rec.Serial))
	return nil
}

func (c *CA) checkRecord(rep *CheckReport, rec *Record) error {
	cert, certErr := c.readCert(rec.CertPath())
	switch {
	case rec.Status == StatusPending:
		return c.finishPending(rep, rec)
	case rec.Status != StatusVoid && certErr != nil:
		rep.Problems = append(rep.Problems, fmt.Sprintf("record %s (%s) has no readable certificate at %q", rec.Serial, rec.Name, c.dir.Join(rec.CertPath())))
	case rec.Status != StatusVoid:
		if _, err := c.dir.Stat(rec.ChainPath()); errors.Is(err, fs.ErrNotExist) {
			if err := c.dir.CreateExclusive(rec.ChainPath(), c.chainPEM(cert), 0o644); err != nil {
				return err
			}
			rep.Repaired = append(rep.Repaired, fmt.Sprintf("rewrote the missing chain file of %s (serial %s)", rec.Name, rec.Serial))
		}
	}
	return nil
}

// finishPending completes an interrupted issuance whose certificate reached
// the disk whole (in its own file or as the first one of its chain file),
// and voids the others, removing their partial or now useless files. The
// key, chain and certificate are synced together, so a power loss can keep
// the certificate and lose the key: such a certificate is recorded (it
// exists, so it must stay revocable) without its key, and reported.
func (c *CA) finishPending(rep *CheckReport, rec *Record) error {
	cert, err := c.readCert(rec.CertPath())
	certFileWhole := err == nil && SerialHex(cert.SerialNumber) == rec.Serial
	if !certFileWhole {
		cert, err = c.firstCert(rec.ChainPath())
		if err != nil || SerialHex(cert.SerialNumber) != rec.Serial {
			return c.voidPending(rep, rec)
		}
		if err := c.dir.WriteAtomic(rec.CertPath(), pemCert(cert), 0o644); err != nil {
			return err
		}
	}
	keyLost := !c.hasKey(rec, cert)
	if keyLost {
		if err := c.dir.Root().Remove(rec.KeyPath()); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("removing %q: %w", c.dir.Join(rec.KeyPath()), err)
		}
		rec.HasKey = false
	}
	if chainCert, err := c.firstCert(rec.ChainPath()); err != nil || !chainCert.Equal(cert) {
		if err := c.dir.WriteAtomic(rec.ChainPath(), c.chainPEM(cert), 0o644); err != nil {
			return err
		}
	}
	fillRecord(rec, cert)
	if err := c.putRecord(rec); err != nil {
		return err
	}
	if keyLost {
		rep.Problems = append(rep.Problems, fmt.Sprintf("completed the interrupted issuance of %s (serial %s), but its key did not reach the disk: revoke it (minica revoke %s) and issue a new one", rec.Name, rec.Serial, rec.Serial))
		return nil
	}
	rep.Repaired = append(rep.Repaired, fmt.Sprintf("completed the interrupted issuance of %s (serial %s)", rec.Name, rec.Serial))
	return nil
}

// hasKey reports whether a record that should have a key has it whole: a
// key file that parses and matches cert.
func (c *CA) hasKey(rec *Record, cert *x509.Certificate) bool {
	if !rec.HasKey {
		return true
	}
	data, err := c.dir.ReadFile(rec.KeyPath())
	if err != nil {
		return false
	}
	key, err := formats.ParsePrivateKeyPEM(data, nil)
	return err == nil && publicKeysEqual(key.Public(), cert.PublicKey)
}

// voidPending marks a pending record void and removes whatever partial
// files its interrupted issuance left: no whole certificate exists.
func (c *CA) voidPending(rep *CheckReport, rec *Record) error {
	if err := c.void(rec, nil); err != nil {
		return err
	}
	for _, f := range []string{rec.KeyPath(), rec.ChainPath(), rec.CertPath()} {
		if err := c.dir.Root().Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("removing %q: %w", c.dir.Join(f), err)
		}
	}
	rep.Repaired = append(rep.Repaired, fmt.Sprintf("voided serial %s of %s: its issuance was interrupted before the certificate was written", rec.Serial, rec.Name))
	return nil
}

// firstCert reads the first certificate of a PEM file.
func (c *CA) firstCert(file string) (*x509.Certificate, error) {
	data, err := c.dir.ReadFile(file)
	if err != nil {
		return nil, err
	}
	certs, err := parseCertsPEM(data)
	if err != nil || len(certs) == 0 {
		return nil, fmt.Errorf("no certificate in %q", c.dir.Join(file))
	}
	return certs[0], nil
}

// removeTemps deletes WriteAtomic's leftover temporary files in dir.
func (c *CA) removeTemps(dir string) error { return c.dir.RemoveTemps(dir) }
