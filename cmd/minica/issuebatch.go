package main

import (
	"bufio"
	"crypto"
	"crypto/x509"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/urfave/cli/v2"

	"minica/ca"
	"minica/ca/batchfile"
	"minica/formats"
	"minica/internal/atomicfile"
)

// batchFlags are the flags of `issue --from`.
func batchFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "from", Usage: "issue one certificate per row of `FILE` (CSV with a header row, or JSON Lines; - for stdin): see docs/batch.md"},
		&cli.StringFlag{Name: "p12-dir", Usage: "with --from and --p12: write each bundle to `DIR`/NAME.p12 (default: the current directory)"},
	}
}

// flagsNotWithFrom set what a --from file sets per row, or name one file.
var flagsNotWithFrom = []string{"cn", "dns", "ip", "email", "uri", "org", "ou", "force", "p12-out", "p12-password-file", "cert-out", "key-out", "chain-out", "overwrite"}

// batchLine is the JSON line `issue --from --json` prints per row.
type batchLine struct {
	Line   int    `json:"line"`
	Status string `json:"status"` // issued, or skipped: an earlier run issued it
	issuedJSON
	P12 string `json:"p12,omitempty"`
}

// batchRun is an `issue --from` in progress.
type batchRun struct {
	c       *cli.Context
	e       *env
	ca      *ca.CA
	p       ca.Profile
	file    string // as named on the command line, for messages
	rows    []*batchfile.Row
	json    bool
	perLine bool // print a line per certificate on stdout
	bar     *progressLine

	p12        bool
	p12Profile formats.P12Profile
	p12Dir     string
	pwFile     *os.File
	pwCSV      *csv.Writer
	pwPath     string
	// knownPasswords are the passwords an earlier run wrote, by bundle.
	knownPasswords map[string]string
	// unsynced are the bundles written since the last syncBundles.
	unsynced []*os.File

	issued, skipped int
	// unresolvable gathers the server certificates issued with names only
	// a search domain or a hosts file resolves, for one warning.
	unresolvable unresolvableTally
}

func runIssueBatch(c *cli.Context, e *env, p ca.Profile) error {
	if c.NArg() > 0 {
		return usagef(c, "with --from the names come from the file: unexpected argument %q", c.Args().First())
	}
	for _, f := range flagsNotWithFrom {
		if !c.IsSet(f) {
			continue
		}
		switch f {
		case "p12-password-file":
			return usagef(c, "--p12-password-file cannot be combined with --from: every bundle gets its own generated password (see --p12-password-out)")
		case "p12-out":
			return usagef(c, "--p12-out cannot be combined with --from: the bundles go to --p12-dir, as NAME.p12")
		case "cert-out", "key-out", "chain-out", "overwrite", "force":
			return usagef(c, "--%s cannot be combined with --from", f)
		}
		return usagef(c, "--%s cannot be combined with --from: give it as a column of the file, or issue that certificate on its own", f)
	}
	b := &batchRun{c: c, e: e, p: p, file: c.String("from"), json: c.Bool("json")}
	d := batchfile.Defaults{Profile: p, EmailInSubject: !c.Bool("no-email-in-subject")}
	var err error
	if d.Validity, err = validityValue(c); err != nil {
		return err
	}
	if d.KeyType, err = keyTypeValue(c); err != nil {
		return err
	}
	if err := b.p12Options(); err != nil {
		return err
	}
	ps, err := b.read(d)
	if err != nil {
		return err
	}
	if b.p12 && len(b.rows) > 1 && c.String("p12-password-out") == "" {
		return withHint(usagef(c, "--p12 with %d rows needs --p12-password-out FILE: their passwords are not shown on the terminal", len(b.rows)),
			"add --p12-password-out passwords.csv (written 0600: name,file,password)")
	}
	authority, unlock, err := lockCA(c, e)
	if err != nil {
		return err
	}
	defer unlock()
	// Said once, with the hint, rather than as a problem of every row.
	if err := refuseRoot(authority); err != nil {
		return err
	}
	b.ca = authority
	// The rows are checked against the CA even when the file has other
	// problems, so that one run lists them all.
	skip := b.check(authority, ps)
	if ps.Total() > 0 {
		return b.fail(ps)
	}
	if len(b.rows) == 0 {
		return fmt.Errorf("%s: no rows: nothing to issue", b.file)
	}
	signer, err := loadSigner(c, e, authority)
	if err != nil {
		return err
	}
	if err := b.openPasswordFile(); err != nil {
		return err
	}
	defer b.closePasswordFile()
	for _, row := range b.rows {
		if err := finishInterrupted(e, authority, row.Request.Name); err != nil {
			return err
		}
	}
	b.startOutput(len(b.rows))
	for i, row := range b.rows {
		if rec := skip[i]; rec != nil {
			if err := b.reportSkipped(authority, row, rec); err != nil {
				return err
			}
		}
	}
	todo := func(yield func(ca.Request) bool) {
		for i, row := range b.rows {
			if skip[i] != nil {
				continue
			}
			if c.Context.Err() != nil || !yield(row.Request) {
				return
			}
		}
	}
	var order []*batchfile.Row
	for i, row := range b.rows {
		if skip[i] == nil {
			order = append(order, row)
		}
	}
	_, err = authority.IssueBatch(signer, iter.Seq[ca.Request](todo), ca.BatchOptions{GroupSize: e.batchGroup}, func(r ca.BatchResult) error {
		return b.reportIssued(order[r.Index], r.Issued)
	})
	if err == nil && c.Context.Err() != nil {
		err = fmt.Errorf("interrupted: %w", c.Context.Err())
	}
	if cerr := b.closePasswordFile(); err == nil {
		err = cerr
	}
	b.finishOutput()
	b.unresolvable.warn(e.stderr)
	if err != nil {
		err = fmt.Errorf("%s: issued %d of %d certificates, then: %w", b.file, b.issued, len(order), err)
		// The hint of its kind (a lost lock: run check first) comes first,
		// but an issuance left incomplete is completed by the run again
		// (FinishInterrupted), which also issues the rest.
		if errorHint(err) != "" && (!errors.Is(err, ca.ErrIssuanceIncomplete) || errors.Is(err, ca.ErrStoreLockLost)) {
			return err
		}
		return withHint(err, "the certificates issued are valid and recorded; run the same command again to issue the rest (rows already issued are skipped)")
	}
	b.summary()
	return nil
}

// p12Options reads the --p12 flags of a batch.
func (b *batchRun) p12Options() error {
	c := b.c
	if !c.Bool("p12") {
		for _, f := range []string{"p12-dir", "p12-password-out"} {
			if c.IsSet(f) {
				return usagef(c, "--%s needs --p12", f)
			}
		}
		return nil
	}
	profile, err := formats.ParseP12Profile(c.String("p12-profile"))
	if err != nil {
		return usagef(c, "--p12-profile: %v", err)
	}
	if os.Getenv(p12PasswordEnv) != "" {
		return withHint(usagef(c, "with --from every bundle gets its own generated password, but %s is set", p12PasswordEnv),
			"unset %s; the passwords go to --p12-password-out", p12PasswordEnv)
	}
	b.p12, b.p12Profile = true, profile
	b.p12Dir = c.String("p12-dir")
	if b.p12Dir == "" {
		b.p12Dir = "."
	}
	if info, err := os.Stat(b.p12Dir); err != nil || !info.IsDir() {
		return usagef(c, "--p12-dir: %s is not a directory", b.p12Dir)
	}
	b.pwPath = c.String("p12-password-out")
	return nil
}

// read reads and validates the file's rows, without the CA; it keeps the
// good rows and returns the problems of the others.
func (b *batchRun) read(d batchfile.Defaults) (*batchfile.Problems, error) {
	var in io.Reader
	name := b.file
	if b.file == "-" {
		in, name, b.file = b.e.stdin, "", "stdin"
	} else {
		f, err := os.Open(b.file)
		if err != nil {
			return nil, fmt.Errorf("--from: %w", err)
		}
		defer f.Close()
		in = f
	}
	var ps *batchfile.Problems
	b.rows, ps = batchfile.Read(in, name, d)
	return ps, nil
}

func (b *batchRun) fail(ps *batchfile.Problems) error {
	fe := &batchFileError{file: b.file, problems: ps}
	fe.print(b.e.stderr)
	return fe
}

// check validates every row against the CA and the bundle files, adding
// to ps; it returns, by row, the certificate an earlier run issued for it.
func (b *batchRun) check(authority *ca.CA, ps *batchfile.Problems) map[int]*ca.Record {
	// The checks only read, under the lock: they run on a few goroutines,
	// as IssueBatch makes its certificates, and are reported in file order.
	recs := make([]*ca.Record, len(b.rows))
	errs := make([]error, len(b.rows))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), 4, len(b.rows)) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < len(b.rows); i = int(next.Add(1) - 1) {
				recs[i], errs[i] = authority.CheckRequest(b.rows[i].Request)
			}
		})
	}
	wg.Wait()
	skip := make(map[int]*ca.Record)
	for i, row := range b.rows {
		rec, err := recs[i], errs[i]
		if err != nil {
			ps.Add(batchfile.Problem{Line: row.Line, Col: row.Column(problemField(err)), Field: problemField(err), Err: rowError(err)})
			continue
		}
		if rec != nil {
			skip[i] = rec
			continue
		}
		if b.p12 {
			if _, err := os.Lstat(b.bundlePath(row.Request.Name)); err == nil {
				ps.Add(batchfile.Problem{Line: row.Line, Col: row.Column("name"), Field: "name", Err: fmt.Errorf("bundle %s %w", b.bundlePath(row.Request.Name), errOutExists)})
			}
		}
	}
	return skip
}

// problemField tells which column a ca error is about.
func problemField(err error) string {
	switch {
	case errors.Is(err, ca.ErrNameTaken):
		return "name"
	case errors.Is(err, ca.ErrOutlivesCA):
		return "validity"
	case strings.Contains(err.Error(), "needs at least one DNS name or IP address"):
		return "dns"
	}
	return ""
}

// rowError says what to do about a name taken by another identity.
func rowError(err error) error {
	if errors.Is(err, ca.ErrNameTaken) {
		return fmt.Errorf("%w, with another identity than this row's: revoke it first, or choose another name", err)
	}
	return err
}

func (b *batchRun) bundlePath(name string) string { return filepath.Join(b.p12Dir, name+".p12") }

// openPasswordFile creates --p12-password-out (0600, O_EXCL), or opens
// for appending the one an earlier run of the batch wrote.
func (b *batchRun) openPasswordFile() error {
	if b.pwPath == "" {
		return nil
	}
	f, err := os.OpenFile(b.pwPath, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	fresh := err == nil
	if errors.Is(err, fs.ErrExist) {
		f, err = b.reopenPasswordFile()
	}
	if err != nil {
		return err
	}
	b.pwFile, b.pwCSV = f, csv.NewWriter(f)
	if fresh {
		b.pwCSV.Write([]string{"name", "file", "password"})
		b.pwCSV.Flush()
		return b.pwCSV.Error()
	}
	return nil
}

// reopenPasswordFile opens an existing password file for appending when an
// earlier batch wrote it: a regular file, mode 0600, with minica's header.
func (b *batchRun) reopenPasswordFile() (*os.File, error) {
	exists := withHint(fmt.Errorf("--p12-password-out: %s %w and is not a password file of an earlier batch", b.pwPath, errOutExists),
		"choose another file; a re-run of a batch appends only to the file it wrote")
	info, err := os.Lstat(b.pwPath)
	if err != nil || !info.Mode().IsRegular() || info.Mode().Perm() != 0o600 {
		return nil, exists
	}
	f, err := os.OpenFile(b.pwPath, os.O_RDWR|os.O_APPEND, 0)
	if err != nil {
		return nil, fmt.Errorf("--p12-password-out: %w", err)
	}
	r := csv.NewReader(bufio.NewReader(f))
	r.FieldsPerRecord = 3
	head, err := r.Read()
	if err != nil || strings.Join(head, ",") != "name,file,password" {
		f.Close()
		return nil, exists
	}
	// The earlier runs' passwords, the last row of a name winning: a
	// re-run checks the bundles it keeps with them.
	b.knownPasswords = make(map[string]string)
	for {
		row, err := r.Read()
		if err != nil {
			break // a row cut short by a crash ends what can be trusted
		}
		b.knownPasswords[row[1]] = row[2]
	}
	return f, nil
}

func (b *batchRun) closePasswordFile() error {
	if b.pwCSV != nil {
		b.pwCSV.Flush()
	}
	serr := b.syncBundles()
	if b.pwFile == nil {
		return serr
	}
	f := b.pwFile
	b.pwFile = nil
	b.pwCSV.Flush()
	err := b.pwCSV.Error()
	if serr := f.Sync(); err == nil {
		err = serr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return errors.Join(serr, fmt.Errorf("writing %s: %w", b.pwPath, err))
	}
	return serr
}

// startOutput sets up the progress bar, on a terminal only, and whether a
// line per certificate goes to stdout: always with --json, else when
// stdout is not a terminal (the bar and the summary say it there).
func (b *batchRun) startOutput(total int) {
	b.perLine = b.json || !b.e.stdoutTerminal()
	if w := b.e.progress(); w != nil {
		b.bar = newProgressLine(w, total, "issuing "+string(b.p)+" certificates")
	}
}

func (b *batchRun) finishOutput() {
	if b.bar != nil {
		b.bar.Finish()
		b.bar = nil
	}
}

func (b *batchRun) tick() {
	if b.bar != nil {
		b.bar.Add(1)
	}
}

// reportSkipped says that an earlier run issued row's certificate, and
// writes its bundle when the earlier run did not get to it.
func (b *batchRun) reportSkipped(authority *ca.CA, row *batchfile.Row, rec *ca.Record) error {
	b.skipped++
	bundle := ""
	if b.p12 {
		bundle = b.bundlePath(rec.Name)
		if err := b.keepOrRewriteBundle(authority, rec); err != nil {
			return err
		}
	}
	b.tick()
	if !b.perLine {
		return nil
	}
	if b.json {
		return writeJSON(b.e.stdout, batchLine{Line: row.Line, Status: "skipped", P12: bundle, issuedJSON: skippedJSON(authority, rec)})
	}
	_, err := fmt.Fprintf(b.e.stdout, "skipped %s %q: issued by an earlier run (serial %s)\n", rec.Profile, rec.Name, rec.Serial)
	return err
}

// keepOrRewriteBundle writes the bundle of a certificate an earlier run
// issued when that run did not leave one that opens with the password its
// file gives (a crash between the row and the bundle, or before they were
// synced); a bundle that does open is kept.
func (b *batchRun) keepOrRewriteBundle(authority *ca.CA, rec *ca.Record) error {
	path := b.bundlePath(rec.Name)
	_, err := os.Lstat(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	exists := err == nil
	if exists && b.pwCSV == nil {
		return nil // one row, its password shown once: nothing to check it with
	}
	leaf, err := authority.LoadLeaf(rec)
	if err != nil {
		return err
	}
	if exists {
		if pw, ok := b.knownPasswords[path]; ok && checkWrittenP12(path, pw, leaf.Key, leaf.Cert) == nil {
			return nil
		}
		if err := os.Remove(path); err != nil {
			return err
		}
		fmt.Fprintf(b.e.stderr, "minica: note: %s did not open with its password in %s: writing it again\n", path, b.pwPath)
	}
	return b.writeBundle(leaf.Key, leaf.Cert, leaf.Chain, rec.Name)
}

func (b *batchRun) reportIssued(row *batchfile.Row, is *ca.Issued) error {
	b.unresolvable.add(is.Record)
	bundle, line, err := b.done(is)
	if err != nil || !line {
		return err
	}
	r := is.Record
	if b.json {
		return writeJSON(b.e.stdout, batchLine{Line: row.Line, Status: "issued", P12: bundle, issuedJSON: issuedOf(is)})
	}
	_, err = fmt.Fprintf(b.e.stdout, "issued %s %q (serial %s): %s\n", r.Profile, r.Name, r.Serial, sanText(r.SANs))
	return err
}

// done counts one durable certificate of the batch, writes its bundle when
// --p12 asks for bundles, and moves the progress bar. It gives the bundle's
// path ("" without --p12) and whether a line per certificate is wanted.
func (b *batchRun) done(is *ca.Issued) (bundle string, line bool, err error) {
	b.issued++
	if b.p12 {
		bundle = b.bundlePath(is.Record.Name)
		if err := b.writeBundle(is.Key, is.Cert, b.ca.Chain, is.Record.Name); err != nil {
			return "", false, err
		}
	}
	b.tick()
	return bundle, b.perLine, nil
}

// writeBundle appends the bundle's password to the password file, then
// writes the bundle (0600, never over an existing file, never partial)
// and checks it decodes. The password comes first: a crash between the
// two leaves a row without a bundle, which a re-run writes again with a
// new password on a later row, never a bundle nobody can open. Without a
// password file (a single row) the password goes to stderr, once.
func (b *batchRun) writeBundle(key crypto.Signer, leaf *x509.Certificate, chain []*x509.Certificate, name string) error {
	pw, err := formats.GeneratePassword()
	if err != nil {
		return err
	}
	data, err := formats.P12Encoder{Profile: b.p12Profile, Name: name}.Encode(key, leaf, chain, pw)
	if err != nil {
		return err
	}
	path := b.bundlePath(name)
	if b.pwCSV != nil {
		b.pwCSV.Write([]string{name, path, pw})
		b.pwCSV.Flush()
		if err := b.pwCSV.Error(); err != nil {
			return fmt.Errorf("writing %s: %w", b.pwPath, err)
		}
	}
	f, err := atomicfile.CreateLinked(atomicfile.OS, path, data, 0o600, false)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("bundle %s %w", path, errOutExists)
	}
	if err != nil {
		return err
	}
	if err := checkWrittenP12(path, pw, key, leaf); err != nil {
		f.Close()
		os.Remove(path)
		return err
	}
	b.unsynced = append(b.unsynced, f)
	if b.pwCSV == nil {
		fmt.Fprintf(b.e.stderr, "minica: the password of %s (shown once): %s\n", path, pw)
	}
	if len(b.unsynced) >= ca.BatchGroupSize {
		return b.syncBundles()
	}
	return nil
}

// syncBundles makes the bundles written since the last call durable, as
// IssueBatch does its certificates, a group at a time: the password file
// first (so that no bundle outlives its password), then the bundles, a few
// at a time, then their directory. A bundle lost or left empty by a power
// loss before that is written again by the re-run (keepOrRewriteBundle).
func (b *batchRun) syncBundles() error {
	if len(b.unsynced) == 0 {
		return nil
	}
	files := b.unsynced
	b.unsynced = nil
	var err error
	if b.pwFile != nil {
		if err = b.pwFile.Sync(); err != nil {
			err = fmt.Errorf("syncing %s: %w", b.pwPath, err)
		}
	}
	if err == nil {
		err = syncFilesConcurrently(files, 8)
	}
	for _, f := range files {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("closing %s: %w", f.Name(), cerr)
		}
	}
	if err == nil {
		err = atomicfile.SyncDir(atomicfile.OS, b.p12Dir)
	}
	return err
}

// syncFilesConcurrently fsyncs files, up to n at a time.
func syncFilesConcurrently(files []*os.File, n int) error {
	errs := make([]error, len(files))
	sem := make(chan struct{}, n)
	var wg sync.WaitGroup
	for i, f := range files {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := f.Sync(); err != nil {
				errs[i] = fmt.Errorf("syncing %s: %w", f.Name(), err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (b *batchRun) summary() {
	what := string(b.p) + " " + plural(b.issued, "certificate", "certificates")
	msg := fmt.Sprintf("issued %d %s from %s", b.issued, what, b.file)
	if b.skipped > 0 {
		msg += fmt.Sprintf("; skipped %d issued by an earlier run", b.skipped)
	}
	if b.pwPath != "" {
		msg += fmt.Sprintf("; bundle passwords in %s (mode 0600)", b.pwPath)
	}
	if b.json {
		fmt.Fprintf(b.e.stderr, "minica: %s\n", msg)
		return
	}
	fmt.Fprintln(b.e.stdout, msg)
}

// skippedJSON describes an existing certificate as issuedJSON does.
func skippedJSON(authority *ca.CA, r *ca.Record) issuedJSON {
	j := issuedJSON{Name: r.Name, Profile: r.Profile, Serial: r.Serial, Subject: r.Subject, SANs: nonNil(r.SANs),
		NotBefore: r.NotBefore, NotAfter: r.NotAfter, SHA256: r.Fingerprint,
		Cert: authority.Path(r.CertPath()), Chain: authority.Path(r.ChainPath())}
	if r.HasKey {
		j.Key = authority.Path(r.KeyPath())
	}
	return j
}

// finishInterrupted completes or voids, as check does, the issuances of
// name that a killed run left (ca.FinishInterrupted), saying what it did.
// The caller holds the lock.
func finishInterrupted(e *env, authority *ca.CA, name string) error {
	notes, err := authority.FinishInterrupted(name)
	for _, n := range notes {
		fmt.Fprintf(e.stderr, "minica: note: %s\n", n)
	}
	return err
}
