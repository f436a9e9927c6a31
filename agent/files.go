package agent

import (
	"bytes"
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"minica/formats"
	"minica/internal/atomicfile"
)

// pendingSuffix names the new key written before the request is sent.
const pendingSuffix = ".next"

// current is what the agent holds: the certificate, its key and chain.
type current struct {
	cert  *x509.Certificate
	key   crypto.Signer
	chain []*x509.Certificate
	// withChain is set when the certificate file holds the chain after
	// the leaf, as the new one then does too.
	withChain bool
}

// load reads the certificate and key, after moving a pending key into
// place when the last run stopped between writing the certificate and the
// key (see the package doc).
func (a *Agent) load() (*current, error) {
	certPEM, err := os.ReadFile(a.cfg.CertFile)
	if err != nil {
		return nil, fmt.Errorf("reading certificate %q: %w", a.cfg.CertFile, err)
	}
	certs, err := formats.ParseCertificates(certPEM)
	if err != nil {
		return nil, fmt.Errorf("reading certificate %q: %w", a.cfg.CertFile, err)
	}
	if len(certs) == 0 {
		return nil, fmt.Errorf("reading certificate %q: no certificate in it", a.cfg.CertFile)
	}
	cur := &current{cert: certs[0], chain: certs[1:], withChain: len(certs) > 1}
	if err := a.recoverPending(cur.cert); err != nil {
		return nil, err
	}
	keyPEM, err := os.ReadFile(a.cfg.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("reading key %q: %w", a.cfg.KeyFile, err)
	}
	if cur.key, err = formats.ParsePrivateKeyPEM(keyPEM, nil); err != nil {
		return nil, fmt.Errorf("reading key %q: %w", a.cfg.KeyFile, err)
	}
	if err := formats.KeyMatchesCertificate(cur.key, cur.cert); err != nil {
		return nil, fmt.Errorf("key %q and certificate %q: %w", a.cfg.KeyFile, a.cfg.CertFile, err)
	}
	if a.cfg.ChainFile != "" {
		data, err := os.ReadFile(a.cfg.ChainFile)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("reading chain %q: %w", a.cfg.ChainFile, err)
		}
		if err == nil {
			if chain, err := formats.ParseCertificates(data); err == nil {
				// The chain file may start with the leaf (cert + chain).
				if len(chain) > 0 && chain[0].Equal(cur.cert) {
					chain = chain[1:]
				}
				if !cur.withChain {
					cur.chain = chain
				}
			}
		}
	}
	return cur, nil
}

// recoverPending handles KEY.next: moved over the key when it matches the
// certificate (the last run was stopped after writing the certificate),
// removed otherwise (stopped before an answer came).
func (a *Agent) recoverPending(cert *x509.Certificate) error {
	pending := a.cfg.KeyFile + pendingSuffix
	data, err := os.ReadFile(pending)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading pending key %q: %w", pending, err)
	}
	key, err := formats.ParsePrivateKeyPEM(data, nil)
	if err == nil && formats.KeyMatchesCertificate(key, cert) == nil {
		if err := os.Rename(pending, a.cfg.KeyFile); err != nil {
			return fmt.Errorf("moving pending key %q into place: %w", pending, err)
		}
		a.log.event("pending-key-installed", "key", a.cfg.KeyFile, "serial", serialHex(cert))
		return atomicfile.SyncDir(atomicfile.OS, filepath.Dir(a.cfg.KeyFile))
	}
	if err := os.Remove(pending); err != nil {
		return fmt.Errorf("removing stale pending key %q: %w", pending, err)
	}
	return nil
}

// owner is a file's mode and owner, which its replacement keeps.
type owner struct {
	perm     fs.FileMode
	uid, gid int
}

// ownerOf returns the mode and owner of file, or def (and the process's
// own ids) when it does not exist.
func ownerOf(file string, def fs.FileMode) (owner, error) {
	o := owner{perm: def, uid: -1, gid: -1}
	info, err := os.Stat(file)
	if errors.Is(err, fs.ErrNotExist) {
		return o, nil
	}
	if err != nil {
		return o, err
	}
	o.perm = info.Mode().Perm()
	if uid, gid, ok := fileOwner(info); ok && os.Geteuid() == 0 {
		o.uid, o.gid = uid, gid
	}
	return o, nil
}

// writeLike replaces file with data atomically and durably, with the mode
// and (as root) the owner o.
func writeLike(file string, data []byte, o owner) error {
	f, tmp, err := atomicfile.WriteTemp(atomicfile.OS, file, o.perm, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	}, true)
	if err != nil {
		return err
	}
	// The mode exactly, whatever the umask (a systemd unit's UMask=0077
	// would otherwise narrow a 0644 certificate).
	if err := f.Chmod(o.perm); err != nil {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("keeping the mode of %q: %w", file, err)
	}
	if o.uid >= 0 {
		if err := f.Chown(o.uid, o.gid); err != nil {
			f.Close()
			os.Remove(tmp)
			return fmt.Errorf("keeping the owner of %q: %w", file, err)
		}
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("writing %q: %w", tmp, err)
	}
	if err := os.Rename(tmp, file); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("replacing %q: %w", file, err)
	}
	return atomicfile.SyncDir(atomicfile.OS, filepath.Dir(file))
}

// writePending writes the new key as KEY.next, with the key's mode and
// owner, before its CSR is sent.
func (a *Agent) writePending(key crypto.Signer) error {
	o, err := ownerOf(a.cfg.KeyFile, 0o600)
	if err != nil {
		return fmt.Errorf("reading the mode of key %q: %w", a.cfg.KeyFile, err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return fmt.Errorf("encoding the new key: %w", err)
	}
	data := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	return writeLike(a.cfg.KeyFile+pendingSuffix, data, o)
}

// install writes the renewed certificate and chain, then moves the pending
// key over the key, in the order the package doc gives.
func (a *Agent) install(old *current, leaf *x509.Certificate, chain []*x509.Certificate) error {
	var chainPEM bytes.Buffer
	for _, c := range chain {
		pem.Encode(&chainPEM, &pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
	}
	if a.cfg.ChainFile != "" {
		o, err := ownerOf(a.cfg.ChainFile, 0o644)
		if err != nil {
			return fmt.Errorf("reading the mode of chain %q: %w", a.cfg.ChainFile, err)
		}
		if err := writeLike(a.cfg.ChainFile, chainPEM.Bytes(), o); err != nil {
			return err
		}
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leaf.Raw})
	if old.withChain {
		certPEM = append(certPEM, chainPEM.Bytes()...)
	}
	o, err := ownerOf(a.cfg.CertFile, 0o644)
	if err != nil {
		return fmt.Errorf("reading the mode of certificate %q: %w", a.cfg.CertFile, err)
	}
	if err := writeLike(a.cfg.CertFile, certPEM, o); err != nil {
		return err
	}
	if err := os.Rename(a.cfg.KeyFile+pendingSuffix, a.cfg.KeyFile); err != nil {
		return fmt.Errorf("moving the new key into place at %q: %w", a.cfg.KeyFile, err)
	}
	return atomicfile.SyncDir(atomicfile.OS, filepath.Dir(a.cfg.KeyFile))
}
