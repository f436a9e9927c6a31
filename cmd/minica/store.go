package main

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"minica/ca"
	"minica/ca/store/pg"
)

// storeEngines are the engines of the stores a CA may keep its database
// in beside its directory's files: the one place that chooses them, and
// so the one that links PostgreSQL's driver.
func storeEngines() []ca.Engine { return []ca.Engine{pg.Engine{}} }

// storeEngine returns the engine of storeEngines that takes the store
// name, or nil for the CA directory's files.
func storeEngine(name string) ca.Engine {
	for _, e := range storeEngines() {
		if e.Handles(name) {
			return e
		}
	}
	return nil
}

// storeFlag is the global --store: which database holds the CA's records.
func storeFlag() cli.Flag {
	return &cli.StringFlag{Name: "store", EnvVars: []string{"MINICA_STORE"},
		Usage: "the issuance database: a postgres:// URL (no password in it) or file (the CA directory); default: the CA settings"}
}

func storeCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:  "store",
		Usage: "migrate or copy the issuance database (the CA directory's files or PostgreSQL)",
		Description: "The records, the revocation log, the CRL number and current CRL and the\n" +
			"enrollments live in the CA directory (the default) or in PostgreSQL, chosen by\n" +
			"--store, MINICA_STORE or the CA settings (init --store records it). The password\n" +
			"of the database is never part of the URL: use ~/.pgpass, PGPASSFILE, a service\n" +
			"file (?service=NAME) or PGPASSWORD; sslmode and the other parameters are libpq's.\n\n" +
			"Example:\n   minica store copy --to postgres://minica@db.example.com/minica?sslmode=verify-full\n" +
			"   minica --store postgres://minica@db.example.com/minica issue client simon",
		Subcommands: []*cli.Command{storeMigrateCommand(e), storeCopyCommand(e)},
	}
}

func storeMigrateCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:      "migrate",
		Usage:     "create or upgrade the schema of the PostgreSQL store",
		ArgsUsage: " ",
		Description: "Applies the schema versions the store lacks, in one transaction. A store\n" +
			"migrated by a newer minica is refused and left alone. init --store runs it too.\n\n" +
			"Example:\n   minica --store postgres://minica@db.example.com/minica store migrate",
		Flags:  []cli.Flag{jsonFlag()},
		Action: func(c *cli.Context) error { return runStoreMigrate(c, e) },
	}
}

func runStoreMigrate(c *cli.Context, e *env) error {
	if err := wantArgs(c, 0, 0); err != nil {
		return err
	}
	store := c.String("store")
	if store == "" {
		dir, err := caDir(c)
		if err != nil {
			return err
		}
		if store, err = ca.SettingsStore(dir); err != nil {
			return err
		}
	}
	if err := ca.CheckStore(store, storeEngines()...); err != nil {
		return err
	}
	engine := storeEngine(store)
	if engine == nil {
		return withHint(errors.New("the CA keeps its database in its directory's files: there is no schema to migrate"),
			"pass --store postgres://... (or set MINICA_STORE) to migrate a PostgreSQL store")
	}
	from, to, err := engine.Migrate(store)
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return writeJSON(e.stdout, map[string]any{"store": store, "from": from, "to": to})
	}
	if from == to {
		fmt.Fprintf(e.stdout, "store %s is at schema version %d: nothing to do\n", store, to)
		return nil
	}
	fmt.Fprintf(e.stdout, "store %s migrated from schema version %d to %d\n", store, from, to)
	return nil
}

func storeCopyCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:      "copy",
		Usage:     "copy the issuance database to another store, losslessly",
		ArgsUsage: " ",
		Description: "Copies every record, the revocation log, the CRL number and current CRL and the\n" +
			"enrollments from the store in use to --to: a postgres:// URL (migrated first) or the\n" +
			"directory of the same CA whose own database is empty. The target must be empty; a\n" +
			"PostgreSQL target is written in one transaction. --use then records the new store\n" +
			"in the CA settings, so that later commands use it without --store. --use is refused\n" +
			"while a minica serve of the CA runs (on this directory, or on the PostgreSQL store\n" +
			"in use, from any host), which would go on writing to the old store: stop them first.\n\n" +
			"Example:\n   minica store copy --to postgres://minica@db.example.com/minica --use\n" +
			"   minica --store postgres://minica@db.example.com/minica store copy --to /srv/ca-files",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "to", Usage: "the target store: a postgres:// URL or a CA directory (required)"},
			&cli.BoolFlag{Name: "use", Usage: "record the target as the CA's store in its settings after the copy"},
			jsonFlag(),
		},
		Action: func(c *cli.Context) error { return runStoreCopy(c, e) },
	}
}

func runStoreCopy(c *cli.Context, e *env) error {
	if err := wantArgs(c, 0, 0); err != nil {
		return err
	}
	to := c.String("to")
	if to == "" {
		return usagef(c, "--to is required: a postgres:// URL or the path of a CA directory")
	}
	if !strings.Contains(to, "://") && to != ca.StoreFile {
		abs, err := filepath.Abs(to)
		if err != nil {
			return fmt.Errorf("resolving %q: %w", to, err)
		}
		to = abs
	}
	authority, unlock, err := lockCA(c, e)
	if err != nil {
		return err
	}
	defer unlock()
	var res *ca.CopyResult
	if c.Bool("use") {
		res, err = authority.MoveStore(to)
	} else {
		res, err = authority.CopyStore(to)
	}
	if errors.Is(err, ca.ErrServeRunning) {
		return withHint(err, "stop every minica serve of this CA (on a PostgreSQL store, the replicas on other hosts too), run the command again, then start them: they open the new store")
	}
	if err != nil {
		return err
	}
	number := ""
	if res.CRLNumber != nil {
		number = res.CRLNumber.String()
	}
	if c.Bool("json") {
		return writeJSON(e.stdout, map[string]any{"from": authority.Store(), "to": res.To, "records": res.Records,
			"revocations": res.Revocations, "enrollments": res.Enrollments, "crl_number": number, "used": c.Bool("use")})
	}
	fmt.Fprintf(e.stdout, "copied %d records, %d revocations and %d enrollments to %s\n", res.Records, res.Revocations, res.Enrollments, res.To)
	if number != "" {
		fmt.Fprintf(e.stdout, "current CRL: number %s\n", number)
	}
	if c.Bool("use") {
		fmt.Fprintf(e.stdout, "the CA now uses %s\n", res.To)
	}
	return nil
}
