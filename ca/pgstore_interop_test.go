//go:build interop

package ca

import (
	"bytes"
	"context"
	"crypto"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/big"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"minica/ca/store/pg"
	"minica/internal/pgtest"
	"minica/revoke"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// newPGCA creates a CA whose database is a fresh PostgreSQL database.
func newPGCA(t *testing.T) (*CA, crypto.Signer, string) {
	t.Helper()
	url := pgtest.New(t)
	c, signer := newTestCA(t, InitOptions{Store: url, FirstCRL: true})
	if c.Store() != url {
		t.Fatalf("Store() = %q; want %q", c.Store(), url)
	}
	return c, signer, url
}

func pgQueryInt(t *testing.T, url, sql string, args ...any) int {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// Issue, renew, revoke, publish and check on PostgreSQL behave as on files,
// and nothing of the database is written into the CA directory.
func TestPGStoreLifecycle(t *testing.T) {
	c, signer, url := newPGCA(t)
	is, err := c.Issue(signer, Request{Name: "simon", Profile: Client, Emails: []string{"s@example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Issue(signer, Request{Name: "simon", Profile: Client}); !errors.Is(err, ErrNameTaken) {
		t.Fatalf("second Issue error = %v; want ErrNameTaken", err)
	}
	renewed, err := c.Renew(signer, is.Record, RenewOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pred, err := c.Record(is.Cert.SerialNumber)
	if err != nil || pred.RenewedBy != renewed.Record.Serial {
		t.Fatalf("predecessor renewed_by = %+v, %v; want %s", pred, err, renewed.Record.Serial)
	}
	res, err := c.Revoke(is.Cert.SerialNumber, revoke.KeyCompromise)
	if err != nil || res.Already {
		t.Fatalf("Revoke = %+v, %v", res, err)
	}
	info, err := c.PublishCRL(signer, 0)
	if err != nil {
		t.Fatal(err)
	}
	crl, err := c.LoadCRL()
	if err != nil {
		t.Fatal(err)
	}
	if e, ok := crl.Lookup(is.Cert.SerialNumber); !ok || e.Reason != revoke.KeyCompromise || crl.Number().Cmp(info.Number) != 0 {
		t.Fatalf("CRL %s lists %v (%v); want the revocation in CRL %s", crl.Number(), e, ok, info.Number)
	}
	recs, err := c.RecordsByName("simon")
	if err != nil || len(recs) != 2 || recs[0].Serial == recs[1].Serial ||
		(recs[0].Serial != is.Record.Serial && recs[1].Serial != is.Record.Serial) {
		t.Fatalf("RecordsByName = %v, %v", recs, err)
	}
	n := 0
	for _, err := range c.Records() {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 2 {
		t.Fatalf("Records() gave %d; want 2", n)
	}
	rep, err := c.Check()
	if err != nil || len(rep.Problems) != 0 || len(rep.Repaired) != 0 || rep.Records != 2 {
		t.Fatalf("Check = %+v, %v", rep, err)
	}
	for _, f := range []string{revlogFile, crlNumberFile} {
		if _, err := c.dir.Stat(f); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s exists in the CA directory of a PostgreSQL CA (%v)", f, err)
		}
	}
	// crl.der is the published copy of the database's CRL; check restores it.
	if der, err := c.dir.ReadFile(CRLDERFile); err != nil || !bytes.Equal(der, info.DER) {
		t.Fatalf("crl.der is not the published CRL (%v)", err)
	}
	if err := c.dir.Root().Remove(CRLPEMFile); err != nil {
		t.Fatal(err)
	}
	rep, err = c.Check()
	if err != nil || len(rep.Problems) != 0 || len(rep.Repaired) != 1 || !strings.Contains(rep.Repaired[0], "from the store (CRL "+info.Number.String()+")") {
		t.Fatalf("Check without crl.pem = %+v, %v", rep, err)
	}
	if _, err := c.dir.Stat(CRLPEMFile); err != nil {
		t.Fatal(err)
	}
	if got := pgQueryInt(t, url, "SELECT count(*) FROM minica_records"); got != 2 {
		t.Errorf("minica_records has %d rows; want 2", got)
	}
}

// A serial is a primary key: a second reservation of it fails with
// fs.ErrExist, and the first row stays.
func TestPGSerialUnique(t *testing.T) {
	c, _, url := newPGCA(t)
	r := &Record{Serial: strings.Repeat("ab", 16), Name: "x", Profile: Client, Status: StatusPending, IssuedAt: time.Now().UTC()}
	if _, err := c.db.Reserve(r); err != nil {
		t.Fatal(err)
	}
	r2 := *r
	r2.Name = "y"
	if _, err := c.db.Reserve(&r2); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("second reserve error = %v; want fs.ErrExist", err)
	}
	if got := pgQueryInt(t, url, "SELECT count(*) FROM minica_records WHERE serial = $1 AND name = 'x'", r.Serial); got != 1 {
		t.Fatalf("%d rows of the serial named x; want 1", got)
	}
}

// spySigner runs check before it signs anything.
type spySigner struct {
	crypto.Signer
	check func()
}

func (s spySigner) Sign(r io.Reader, d []byte, o crypto.SignerOpts) ([]byte, error) {
	s.check()
	return s.Signer.Sign(r, d, o)
}

// The pending row is committed (another session sees it) before the
// certificate is signed, and a revocation before the CRL is signed.
func TestPGCommittedBeforeSigning(t *testing.T) {
	c, signer, url := newPGCA(t)
	var pending int
	spy := spySigner{signer, func() {
		pending = pgQueryInt(t, url, "SELECT count(*) FROM minica_records WHERE status = 'pending' AND name = 'alice'")
	}}
	is, err := c.Issue(spy, Request{Name: "alice", Profile: Client})
	if err != nil {
		t.Fatal(err)
	}
	if pending != 1 {
		t.Fatalf("while signing, another session saw %d pending rows of alice; want 1", pending)
	}
	if _, err := c.Revoke(is.Cert.SerialNumber, revoke.Superseded); err != nil {
		t.Fatal(err)
	}
	var logged int
	spy.check = func() {
		logged = pgQueryInt(t, url, "SELECT count(*) FROM minica_revocations WHERE serial = $1 AND reason = 'superseded'", is.Record.Serial)
	}
	if _, err := c.PublishCRL(spy, 0); err != nil {
		t.Fatal(err)
	}
	if logged != 1 {
		t.Fatalf("while the CRL was signed, another session saw %d revocation rows; want 1", logged)
	}
}

// CRL numbers strictly increase across writers that do not share a lock,
// even with a clock that goes back, and the current CRL is the highest.
func TestPGCRLNumberAcrossWriters(t *testing.T) {
	c, signer, url := newPGCA(t)
	const writers, each = 4, 5
	numbers := make(chan *big.Int, writers*each)
	var wg sync.WaitGroup
	for w := range writers {
		cw, err := openTest(c.dir.Path())
		if err != nil {
			t.Fatal(err)
		}
		defer cw.Close()
		// Half the writers' clocks are a day behind.
		if w%2 == 1 {
			cw.Now = func() time.Time { return time.Now().Add(-24 * time.Hour) }
		}
		wg.Go(func() {
			for range each {
				info, err := cw.PublishCRL(signer, 0)
				if err != nil {
					t.Error(err)
					return
				}
				numbers <- info.Number
			}
		})
	}
	wg.Wait()
	close(numbers)
	seen := map[string]bool{}
	max := new(big.Int)
	for n := range numbers {
		if seen[n.String()] {
			t.Errorf("CRL number %s used twice", n)
		}
		seen[n.String()] = true
		if n.Cmp(max) > 0 {
			max = n
		}
	}
	crl, err := c.LoadCRL()
	if err != nil {
		t.Fatal(err)
	}
	if crl.Number().Cmp(max) != 0 {
		t.Fatalf("current CRL is number %s; want the highest, %s", crl.Number(), max)
	}
	if got := pgQueryInt(t, url, "SELECT (last_number = number)::int FROM minica_crl"); got != 1 {
		t.Fatalf("the last number reserved is not the current CRL's")
	}
}

// A transaction that PostgreSQL aborts for serialization (40001) is
// retried, and its work done once. The conflict is a real one: a second
// serializable transaction reads what the first writes and writes what it
// read, and commits first.
func TestPGSerializationRetried(t *testing.T) {
	c, _, url := newPGCA(t)
	s := c.db.(*pg.Store)
	s.SetBeforeCommit(func(ctx context.Context, tx pgx.Tx, attempt int) error {
		if attempt > 0 {
			return nil
		}
		var v string
		if err := tx.QueryRow(ctx, "SELECT value FROM minica_meta WHERE key = 'ca_sha256'").Scan(&v); err != nil {
			return err
		}
		other, err := pgx.Connect(ctx, url)
		if err != nil {
			return err
		}
		defer other.Close(ctx)
		return pgx.BeginTxFunc(ctx, other, pgx.TxOptions{IsoLevel: pgx.Serializable}, func(o pgx.Tx) error {
			var n string
			if err := o.QueryRow(ctx, "SELECT last_number::text FROM minica_crl").Scan(&n); err != nil {
				return err
			}
			_, err := o.Exec(ctx, "UPDATE minica_meta SET value = value WHERE key = 'ca_sha256'")
			return err
		})
	})
	before, err := c.db.LastCRLNumber()
	if err != nil {
		t.Fatal(err)
	}
	n, err := c.db.NextCRLNumber(time.Unix(0, 0))
	if err != nil {
		t.Fatalf("nextCRLNumber: %v", err)
	}
	if s.Retries() != 1 {
		t.Fatalf("%d retries; want 1", s.Retries())
	}
	if want := new(big.Int).Add(before, big.NewInt(1)); n.Cmp(want) != 0 {
		t.Fatalf("nextCRLNumber = %s; want %s (one reservation, not two)", n, want)
	}
	// A conflict on every attempt gives up after pg.MaxAttempts, saying so.
	s.SetBeforeCommit(func(context.Context, pgx.Tx, int) error { return &pgconn.PgError{Code: "40001"} })
	retried := s.Retries()
	_, err = c.db.NextCRLNumber(time.Now())
	if err == nil || !strings.Contains(err.Error(), "still failing for serialization after 8 attempts") || s.Retries()-retried != pg.MaxAttempts {
		t.Fatalf("nextCRLNumber with endless conflicts: %v after %d retries", err, s.Retries()-retried)
	}
	if after, _ := c.db.LastCRLNumber(); after.Cmp(n) != 0 {
		t.Fatalf("failed reservations moved the CRL number from %s to %s", n, after)
	}
}

// The schema is versioned: migrate is idempotent, an unmigrated database and
// a newer schema are refused with what to do, and migrate leaves a newer
// schema alone.
func TestPGSchemaVersions(t *testing.T) {
	c, _ := newTestCA(t, InitOptions{})
	url := pgtest.New(t)
	_, err := OpenWith(c.dir.Path(), OpenOptions{Store: url, Engines: testEngines})
	if !errors.Is(err, pg.ErrSchema) || !strings.Contains(err.Error(), "has no minica schema") {
		t.Fatalf("OpenWith(unmigrated) error = %v", err)
	}
	from, to, err := pg.Migrate(url)
	if err != nil || from != 0 || to != pg.SchemaVersion {
		t.Fatalf("MigrateStore = %d, %d, %v; want 0, %d", from, to, err, pg.SchemaVersion)
	}
	if from, to, err = pg.Migrate(url); err != nil || from != to || to != pg.SchemaVersion {
		t.Fatalf("second MigrateStore = %d, %d, %v", from, to, err)
	}
	pgtest.Exec(t, url, "INSERT INTO minica_schema (version, name) VALUES (99, '0099_future.sql')")
	want := fmt.Sprintf("schema version 99, newer than this minica knows (%d)", pg.SchemaVersion)
	if _, _, err := pg.Migrate(url); !errors.Is(err, pg.ErrSchema) || !strings.Contains(err.Error(), want) {
		t.Fatalf("pg.Migrate(newer) error = %v; want %q", err, want)
	}
	if _, err := OpenWith(c.dir.Path(), OpenOptions{Store: url, Engines: testEngines}); !errors.Is(err, pg.ErrSchema) || !strings.Contains(err.Error(), want) {
		t.Fatalf("OpenWith(newer) error = %v; want %q", err, want)
	}
	if got := pgQueryInt(t, url, "SELECT count(*) FROM minica_schema"); got != pg.SchemaVersion+1 {
		t.Fatalf("minica_schema has %d rows after the refused migration; want %d", got, pg.SchemaVersion+1)
	}
}

// A database holds one CA: another CA's Open and Init are refused.
func TestPGForeignCA(t *testing.T) {
	_, _, url := newPGCA(t)
	other, _ := newTestCA(t, InitOptions{CommonName: "Other"})
	if _, err := OpenWith(other.dir.Path(), OpenOptions{Store: url, Engines: testEngines}); !errors.Is(err, ErrForeignStore) {
		t.Fatalf("OpenWith(another CA) error = %v; want ErrForeignStore", err)
	}
	dir := t.TempDir() + "/third"
	if _, err := Init(dir, InitOptions{CommonName: "Third", Store: url, Engines: testEngines}); !errors.Is(err, ErrForeignStore) {
		t.Fatalf("Init(--store of another CA) error = %v; want ErrForeignStore", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("refused Init left %q behind (%v)", dir, err)
	}
}

// The mutation lock is an advisory lock: a second holder waits, then fails
// naming the first one's pid.
func TestPGLock(t *testing.T) {
	c, _, _ := newPGCA(t)
	unlock, err := c.Lock(time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c2, err := openTest(c.dir.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	_, err = c2.Lock(50 * time.Millisecond)
	var le *LockError
	if !errors.As(err, &le) || le.PID != os.Getpid() {
		t.Fatalf("second Lock error = %v; want a LockError naming pid %d", err, os.Getpid())
	}
	unlock()
	unlock2, err := c2.Lock(time.Second)
	if err != nil {
		t.Fatalf("Lock after unlock: %v", err)
	}
	unlock2()
}

// The password comes from libpq's sources (PGPASSFILE, PGPASSWORD), never
// the URL, and TLS follows sslmode: verify-full checks the server against
// sslrootcert, and the server here refuses connections without TLS.
func TestPGPasswordSourcesAndTLS(t *testing.T) {
	c, _ := newTestCA(t, InitOptions{})
	url := pgtest.New(t)
	pgtest.Exec(t, url, "CREATE ROLE minica LOGIN PASSWORD 'pw-of-the-test'")
	pgtest.Exec(t, url, "GRANT CREATE ON SCHEMA public TO minica")
	tcp := pgtest.TCP(url, "minica")
	passfile := t.TempDir() + "/pgpass"
	if err := os.WriteFile(passfile, []byte("127.0.0.1:*:*:minica:pw-of-the-test\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PGPASSWORD", "")
	t.Setenv("PGPASSFILE", t.TempDir()+"/none")
	if _, _, err := pg.Migrate(tcp); err == nil || !strings.Contains(err.Error(), "connecting to the store") {
		t.Fatalf("MigrateStore without a password: %v", err)
	}
	t.Setenv("PGPASSFILE", passfile)
	if _, _, err := pg.Migrate(tcp); err != nil {
		t.Fatalf("MigrateStore with PGPASSFILE: %v", err)
	}
	t.Setenv("PGPASSFILE", t.TempDir()+"/none")
	t.Setenv("PGPASSWORD", "pw-of-the-test")
	db, err := OpenWith(c.dir.Path(), OpenOptions{Store: tcp, Engines: testEngines})
	if err != nil {
		t.Fatalf("OpenWith with PGPASSWORD: %v", err)
	}
	db.Close()
	if err := CheckStore(strings.Replace(tcp, "minica@", "minica:pw-of-the-test@", 1), testEngines...); !errors.Is(err, pg.ErrPassword) {
		t.Fatalf("CheckStore(URL with a password) = %v", err)
	}
	other := t.TempDir() + "/other.crt"
	otherCA, _ := newTestCA(t, InitOptions{CommonName: "Not the server"})
	if err := os.WriteFile(other, pemCert(otherCA.Cert), 0o644); err != nil {
		t.Fatal(err)
	}
	wrongRoot := strings.Replace(tcp, "sslrootcert="+pgtest.RootCert(), "sslrootcert="+other, 1)
	if _, err := OpenWith(c.dir.Path(), OpenOptions{Store: wrongRoot, Engines: testEngines}); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("OpenWith(verify-full against another root) = %v; want a certificate error", err)
	}
	noTLS := strings.Replace(tcp, "sslmode=verify-full", "sslmode=disable", 1)
	if _, err := OpenWith(c.dir.Path(), OpenOptions{Store: noTLS, Engines: testEngines}); err == nil || !strings.Contains(err.Error(), "no encryption") {
		t.Fatalf("OpenWith(sslmode=disable) against a TLS-only server = %v", err)
	}
}

// Enrollments on PostgreSQL: one pending link per name, the token redeemed
// once, the latest link of a name found by it, a cancelled one spent.
func TestPGEnrollments(t *testing.T) {
	c, signer, url := newPGCA(t)
	link, err := c.CreateEnrollment("simon", EnrollIdentity{Emails: []string{"simon@example.com"}}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateEnrollment("simon", EnrollIdentity{}, time.Hour); !errors.Is(err, ErrEnrollmentPending) {
		t.Fatalf("second link for simon: %v; want ErrEnrollmentPending", err)
	}
	if got := pgQueryInt(t, url, "SELECT count(*) FROM minica_enrollments WHERE strpos(data, $1) > 0", link.Token); got != 0 {
		t.Fatal("the database holds the token itself")
	}
	key, err := ECDSAP256.Generate()
	if err != nil {
		t.Fatal(err)
	}
	is, e, err := c.Enroll(signer, link.Token, "127.0.0.1", key.Public())
	if err != nil || e.Status != EnrollUsed || e.Serial != is.Record.Serial {
		t.Fatalf("Enroll = %+v, %v", e, err)
	}
	var spent *EnrollmentSpentError
	if _, _, err := c.Enroll(signer, link.Token, "127.0.0.1", key.Public()); !errors.As(err, &spent) || spent.Status != EnrollUsed {
		t.Fatalf("second Enroll: %v; want the link spent (used)", err)
	}
	if _, err := c.Revoke(is.Cert.SerialNumber, revoke.Superseded); err != nil {
		t.Fatal(err)
	}
	second, err := c.CreateEnrollment("simon", EnrollIdentity{}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	latest, err := c.EnrollmentByName("simon")
	if err != nil || latest.ID != second.Enrollment.ID {
		t.Fatalf("EnrollmentByName = %+v, %v; want %s", latest, err, second.Enrollment.ID)
	}
	if _, err := c.CancelEnrollment(KindLink, "simon"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.LookupEnrollment(second.Token); err != nil {
		t.Fatal(err)
	}
	n := 0
	for e, err := range c.Enrollments() {
		if err != nil {
			t.Fatal(err)
		}
		if e.ID == second.Enrollment.ID && e.Status != EnrollCancelled {
			t.Errorf("cancelled link is %s", e.Status)
		}
		n++
	}
	if n != 2 {
		t.Fatalf("%d enrollments; want 2", n)
	}
}

// The line of a certificate on PostgreSQL: see testRevokeLine. The
// certificate and its successors are revoked in one transaction.
func TestPGRevokeLine(t *testing.T) {
	start := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	url := pgtest.New(t)
	c, signer := newTestCA(t, InitOptions{Store: url, FirstCRL: true, Now: fixedClock(start.Add(-time.Hour))})
	testRevokeLine(t, c, signer, start)
	if n := pgQueryInt(t, url, `SELECT count(*) FROM minica_records WHERE status = 'revoked' AND data::jsonb->>'name' = 'alice'`); n != 4 {
		t.Errorf("%d revoked records of alice in the database; want 4", n)
	}
}

// Bootstrap tokens on PostgreSQL: stored as hashes, redeemed once with a
// CSR, the same key answered again, and kept apart from links.
func TestPGTokens(t *testing.T) {
	c, signer, url := newPGCA(t)
	tok, err := c.CreateToken("web2", EnrollIdentity{Profile: Server, DNSNames: []string{"web2.example.com"}}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if got := pgQueryInt(t, url, "SELECT count(*) FROM minica_enrollments WHERE strpos(data, $1) > 0", tok.Token); got != 0 {
		t.Fatal("the database holds the token itself")
	}
	if _, err := c.LookupEnrollment(tok.Token); !errors.Is(err, ErrEnrollmentUnknown) {
		t.Fatalf("LookupEnrollment(a token) = %v; want ErrEnrollmentUnknown", err)
	}
	key := newKey(t)
	is, e, err := c.RedeemToken(signer, tok.Token, "127.0.0.1", tokenCSR(t, key))
	if err != nil || e.Status != EnrollUsed || is.Record.Profile != Server {
		t.Fatalf("RedeemToken = %+v, %+v, %v", is, e, err)
	}
	again, _, err := c.RedeemToken(signer, tok.Token, "127.0.0.1", tokenCSR(t, key))
	if err != nil || !again.Cert.Equal(is.Cert) {
		t.Fatalf("RedeemToken again with the same key = %v; want the same certificate", err)
	}
	var spent *EnrollmentSpentError
	if _, _, err := c.RedeemToken(signer, tok.Token, "127.0.0.1", tokenCSR(t, newKey(t))); !errors.As(err, &spent) {
		t.Fatalf("RedeemToken with another key = %v; want the token spent", err)
	}
	if recs, err := c.RecordsByName("web2"); err != nil || len(recs) != 1 {
		t.Fatalf("%d records for web2 (%v); want 1", len(recs), err)
	}
}
