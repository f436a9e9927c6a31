package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/urfave/cli/v2"

	"minica/ca"
)

// run is main without the exit: it runs one command line and returns the
// exit status.
func run(ctx context.Context, args []string, e *env) int {
	app := newApp(e)
	if n := len(args); n >= 2 && args[n-1] == "--generate-bash-completion" && complete(app, args[1:n-1], e.stdout) {
		return 0
	}
	if n := len(args); n == 0 || args[n-1] != "--generate-bash-completion" {
		if err := checkArgs(app, args); err != nil {
			return report(e.stderr, err)
		}
	}
	if err := app.RunContext(ctx, permute(app, args)); err != nil {
		return report(e.stderr, err)
	}
	return 0
}

func newApp(e *env) *cli.App {
	app := &cli.App{
		Name:  "minica",
		Usage: "a mutual-TLS private CA: certificates, bundles, revocation and an mTLS proxy",
		Description: "minica keeps one private CA in a directory (--dir, $MINICA_DIR, default ~/.minica).\n\n" +
			"Example:\n   minica init --cn 'Acme Internal CA'\n   minica issue server web1 --dns web1.example.com\n   minica issue client simon --email simon@example.com",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "dir", EnvVars: []string{"MINICA_DIR"}, Usage: "the CA directory (default: ~/.minica)"},
			&cli.DurationFlag{Name: "lock-timeout", Value: 10 * time.Second, Usage: "how long a change waits for another minica process to release the CA"},
			versionFlag(),
			storeFlag(),
			// urfave/cli adds --help itself only when no command is
			// named help, and minica has its own help command.
			cli.HelpFlag,
		},
		Commands: []*cli.Command{
			initCommand(e),
			issueCommand(e),
			signCommand(e),
			signIntermediateCommand(e),
			renewCommand(e),
			listCommand(e),
			reportCommand(e),
			showCommand(e),
			revokeCommand(e),
			crlCommand(e),
			ocspCommand(e),
			verifyCommand(e),
			checkCommand(e),
			exportCommand(e),
			convertCommand(e),
			inspectCommand(e),
			selfsignedCommand(e),
			proxyCommand(e),
			echoCommand(e),
			serveCommand(e),
			enrollCommand(e),
			tokenCommand(e),
			acmeCommand(e),
			agentCommand(e),
			configCommand(e),
			storeCommand(e),
			completionCommand(e),
			versionCommand(e),
			helpCommand(e),
		},
		Reader:               e.stdin,
		Writer:               e.stdout,
		ErrWriter:            e.stderr,
		EnableBashCompletion: true,
		HideHelpCommand:      true,
		// "--org 'Acme, Inc.'" is one organization, not two.
		DisableSliceFlagSeparator: true,
		ExitErrHandler:            func(*cli.Context, error) {}, // only main exits
		OnUsageError:              onUsageError,
		// --version answers before any command runs, whatever follows it.
		Before: func(c *cli.Context) error {
			if c.Bool("version") {
				fmt.Fprint(e.stdout, buildVersionText())
				return &exitError{code: 0}
			}
			return nil
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return unknownCommand(c, "unknown command %q", nil, c.Args().First(), c.App.Commands)
			}
			cli.ShowAppHelp(c)
			return &exitError{code: 2}
		},
	}
	for _, cmd := range app.Commands {
		setupCommand(cmd)
	}
	return app
}

func onUsageError(c *cli.Context, err error, _ bool) error {
	return usagef(c, "%s", doubleDash(err.Error()))
}

// setupCommand sets the usage-error handler on cmd and its subcommands,
// gives a command that only groups others missingSubcommand as its action
// (so "minica store bogus" is a usage error, exit 2), and takes urfave/cli's
// "help" (alias "h") subcommand away from every command without
// subcommands: there the first argument is a NAME or a FILE, and a
// certificate named "help" must be revoked, not answered with usage. --help
// and -h still ask for help; after "--" nothing does (see permute).
func setupCommand(cmd *cli.Command) {
	cmd.OnUsageError = onUsageError
	if len(cmd.Subcommands) == 0 {
		cmd.HideHelpCommand = true
	} else if cmd.Action == nil {
		cmd.Action = missingSubcommand
	}
	for _, sub := range cmd.Subcommands {
		setupCommand(sub)
	}
}

// wantArgs checks the number of positional arguments.
func wantArgs(c *cli.Context, min, max int) error {
	n := c.NArg()
	switch {
	case n < min && min == max:
		return usagef(c, "%s takes %d argument(s) (%s), got %d", c.Command.HelpName, min, c.Command.ArgsUsage, n)
	case n < min:
		return usagef(c, "%s needs at least %d argument(s) (%s)", c.Command.HelpName, min, c.Command.ArgsUsage)
	case n > max:
		err := usagef(c, "unexpected argument %q", c.Args().Get(max))
		// "crl stauts": a subcommand misspelt.
		if near := nearestCommand(c.Args().Get(max), c.Command.Subcommands); near != "" && max == 0 {
			return withHint(err, "did you mean '%s %s'?", c.Command.HelpName, near)
		}
		return err
	}
	return nil
}

// caDir returns the CA directory: --dir, $MINICA_DIR, or ~/.minica.
func caDir(c *cli.Context) (string, error) {
	if d := c.String("dir"); d != "" {
		return d, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", withHint(fmt.Errorf("finding the default CA directory: %w", err), "pass --dir or set MINICA_DIR")
	}
	return filepath.Join(home, ".minica"), nil
}

// openCA opens the CA directory with the env's clock.
func openCA(c *cli.Context, e *env) (*ca.CA, error) {
	dir, err := caDir(c)
	if err != nil {
		return nil, err
	}
	// Absolute once, here: paths derived from it end up in configuration
	// files and jobs that run from another directory.
	if dir, err = filepath.Abs(dir); err != nil {
		return nil, fmt.Errorf("resolving the CA directory: %w", err)
	}
	authority, err := ca.OpenWith(dir, ca.OpenOptions{Store: c.String("store"), Engines: storeEngines()})
	if err != nil {
		return nil, err
	}
	authority.Now = e.now
	return authority, nil
}

// lockCA opens the CA and takes its lock for a mutation.
func lockCA(c *cli.Context, e *env) (*ca.CA, func(), error) {
	authority, err := openCA(c, e)
	if err != nil {
		return nil, nil, err
	}
	unlock, err := authority.Lock(c.Duration("lock-timeout"))
	if err != nil {
		authority.Close()
		return nil, nil, err
	}
	return authority, func() { unlock(); authority.Close() }, nil
}
