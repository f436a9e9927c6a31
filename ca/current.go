package ca

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"

	"minica/internal/atomicfile"
)

// The stable names of a name's current certificate, key and chain in
// certs/NAME. They are relative symbolic links (hard links where the system
// refuses symbolic ones, as Windows does without privilege) to the newest
// certificate issued under NAME, so that a server configured with them
// serves the successor after a re-issue and a reload. An ACME
// certificate moves none of them (see Current).
const (
	CurrentCertFile  = "current.crt"
	CurrentKeyFile   = "current.key"
	CurrentChainFile = "current.chain.pem"
)

// CurrentCertPath is the path, relative to the CA directory, of the link to
// name's current certificate; CurrentKeyPath and CurrentChainPath those of
// its key and chain.
func CurrentCertPath(name string) string { return path.Join(certDir(name), CurrentCertFile) }

// CurrentKeyPath is the link to name's current private key (see
// CurrentCertPath); it is absent when minica does not hold that key.
func CurrentKeyPath(name string) string { return path.Join(certDir(name), CurrentKeyFile) }

// CurrentChainPath is the link to name's current chain (see CurrentCertPath).
func CurrentChainPath(name string) string { return path.Join(certDir(name), CurrentChainFile) }

// isCurrentLink reports whether base is one of the current.* names.
func isCurrentLink(base string) bool {
	return base == CurrentCertFile || base == CurrentKeyFile || base == CurrentChainFile
}

// Current returns the record that name's current.* links point to: the
// newest certificate issued under name, whatever its status, or nil when
// name has none. Pending reservations do not count, and neither do ACME
// certificates (a record with an ACME account): their holder is the ACME
// client, which keeps the certificate it downloads itself, and a name's
// ACME certificates may come many a minute, where every link moved costs
// the file system an inode made and one freed. Records keep issuance
// times to the second: of several issued in the same second, a certificate
// renewed by another of them never wins; of the rest, the one the links
// already name wins (Issue links the one it issued), else the one with the
// highest serial.
func (c *CA) Current(name string) (*Record, error) {
	recs, err := c.RecordsByName(name)
	if err != nil {
		return nil, err
	}
	recs = slices.DeleteFunc(recs, func(r *Record) bool { return r.Status == StatusPending || r.ACMEAccount != "" })
	if len(recs) == 0 {
		return nil, nil
	}
	first := len(recs) - 1
	for first > 0 && recs[first-1].IssuedAt.Equal(recs[first].IssuedAt) {
		first--
	}
	same := recs[first:]
	tied := slices.DeleteFunc(slices.Clone(same), func(r *Record) bool {
		return slices.ContainsFunc(same, func(s *Record) bool { return s.RenewalOf == r.Serial })
	})
	if len(tied) == 0 { // only a hand-made cycle of renewals gets here
		tied = same
	}
	for _, r := range slices.Backward(tied[:len(tied)-1]) {
		if c.linkCurrentOK(certDir(name), CurrentCertFile, path.Base(r.CertPath())) {
			return r, nil
		}
	}
	return tied[len(tied)-1], nil
}

// currentLinks lists each link of rec's name with its target (a file name
// in the same directory), key first and certificate last, the order in
// which linkCurrent moves them; an empty target means the link must go.
func currentLinks(rec *Record) [][2]string {
	key := ""
	if rec.HasKey {
		key = path.Base(rec.KeyPath())
	}
	return [][2]string{
		{CurrentKeyFile, key},
		{CurrentChainFile, path.Base(rec.ChainPath())},
		{CurrentCertFile, path.Base(rec.CertPath())},
	}
}

// linkCurrent points the current.* links of rec's name at rec's files. Each
// link is created under a temporary name and renamed over the old one, so a
// reader always finds a whole file, the old one or the new. The directory
// is not synced: after a power loss Check points the links again.
func (c *CA) linkCurrent(rec *Record) error {
	dir := certDir(rec.Name)
	d, err := c.dir.OpenSub(dir)
	if err != nil {
		return fmt.Errorf("opening %q: %w", c.dir.Join(dir), err)
	}
	defer d.Close()
	return linkCurrentIn(d, rec, true)
}

// linkCurrentIn is linkCurrent in d, rec's certs/NAME, open: each link then
// costs a system call or two, not one per path element. With fresh (a
// name's first certificate, probably) a link is first made in place,
// saving the temporary name and the rename when there is nothing to
// replace; a batch knows whether it created the directory, so a renewal
// goes straight to the temporary name.
func linkCurrentIn(d *Dir, rec *Record, fresh bool) error {
	for _, l := range currentLinks(rec) {
		if l[1] == "" {
			if err := d.Root().Remove(l[0]); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("removing %q: %w", d.Join(l[0]), err)
			}
			continue
		}
		if err := replaceLink(d, l[0], l[1], fresh); err != nil {
			return err
		}
	}
	return nil
}

// replaceLink makes link a link to target, both in d, atomically.
func replaceLink(d *Dir, link, target string, fresh bool) error {
	if fresh && d.Root().Symlink(target, link) == nil {
		return nil
	}
	var b [8]byte
	rand.Read(b[:])
	tmp := atomicfile.TempPrefix + link + "-" + hex.EncodeToString(b[:])
	err := d.Root().Symlink(target, tmp)
	if err != nil {
		// No symbolic links here (Windows without privilege): a hard link
		// serves a reader the same.
		err = d.Root().Link(target, tmp)
	}
	if err != nil {
		return fmt.Errorf("linking %q: %w", d.Join(link), err)
	}
	if err := d.Root().Rename(tmp, link); err != nil {
		d.Root().Remove(tmp)
		return fmt.Errorf("linking %q: %w", d.Join(link), err)
	}
	return nil
}

// linkCurrentOK reports whether dir/link already is a link to target: a
// symbolic link naming it, or a file with the same content (a hard link).
func (c *CA) linkCurrentOK(dir, link, target string) bool {
	name := path.Join(dir, link)
	if target == "" {
		_, err := c.dir.Root().Lstat(name)
		return errors.Is(err, fs.ErrNotExist)
	}
	if got, err := c.dir.Root().Readlink(name); err == nil {
		return got == target
	}
	have, err := c.dir.ReadFile(name)
	if err != nil {
		return false
	}
	want, err := c.dir.ReadFile(path.Join(dir, target))
	return err == nil && bytes.Equal(have, want)
}

// checkCurrent points the current.* links of every name at its current
// certificate (see Current) where a crash or a hand left them elsewhere,
// missing or dangling.
func (c *CA) checkCurrent(rep *CheckReport) error {
	names, err := fs.ReadDir(c.dir.Root().FS(), "certs")
	if err != nil {
		return fmt.Errorf("listing %q: %w", c.dir.Join("certs"), err)
	}
	for _, n := range names {
		if !n.IsDir() || ValidateName(n.Name()) != nil {
			continue // checkCerts reports it
		}
		if err := c.checkCurrentOf(rep, n.Name()); err != nil {
			return err
		}
	}
	return nil
}

// checkCurrentOf points the current.* links of name at its current
// certificate when they point elsewhere, or nowhere.
func (c *CA) checkCurrentOf(rep *CheckReport, name string) error {
	rec, err := c.Current(name)
	if err != nil || rec == nil {
		return err
	}
	if _, err := c.dir.Stat(rec.CertPath()); err != nil {
		return nil
	}
	dir := certDir(rec.Name)
	ok := true
	for _, l := range currentLinks(rec) {
		ok = ok && c.linkCurrentOK(dir, l[0], l[1])
	}
	if ok {
		return nil
	}
	if err := c.linkCurrent(rec); err != nil {
		return err
	}
	rep.Repaired = append(rep.Repaired, fmt.Sprintf("pointed the current.* links of %s at serial %s", rec.Name, rec.Serial))
	return nil
}
