package main

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"minica/ca"
)

// checkArgs looks at a whole command line before urfave/cli parses it, to
// blame the real mistake: urfave/cli (through Go's flag package) sees only
// one command's flags, prints "-name" whatever was typed, blames a flag
// for a misspelt subcommand, and takes a flag given last without its
// value for a missing argument. The first mistake, in the order typed,
// is returned as a usage error; a command line without one gives nil and
// urfave/cli goes on as before. It walks the tokens as permute does.
func checkArgs(app *cli.App, args []string) error {
	if len(args) < 2 {
		return nil
	}
	tokens := args[1:]
	path, _ := commandPath(app, tokens)
	leaf, names := leafCommand(app, tokens), commandNames(app, tokens, path)
	known := append(append([]cli.Flag(nil), app.Flags...), flagsOf(leaf)...)
	var unknown, positional string
	afterUnknown := false // the token after an unknown flag may be its value
	for i := 0; i < len(tokens); i++ {
		tok := tokens[i]
		if tok == "--" {
			break
		}
		if len(path) > 0 && i == path[0] {
			path = path[1:]
			continue
		}
		if !isFlag(tok) {
			if positional == "" && !afterUnknown {
				positional = tok
			}
			afterUnknown = false
			continue
		}
		afterUnknown = false
		f := findFlag(known, tok)
		if f == nil && isSecretFlag(flagName(tok)) {
			// Its value is a secret: never taken for a subcommand and
			// echoed, whatever else is wrong.
			return unknownFlag(names, tok, flagsOf(leaf), app.Flags)
		}
		if f == nil {
			if unknown == "" {
				unknown = tok
			}
			afterUnknown = !strings.Contains(tok, "=")
			continue
		}
		if !takesValue(f, tok) {
			continue
		}
		if next := i + 1; next == len(tokens) || tokens[next] == "--" || isFlag(tokens[next]) && findFlag(known, tokens[next]) != nil {
			if unknown == "" {
				return missingValue(names, tok)
			}
			break
		}
		i++
	}
	if unknown == "" {
		return nil
	}
	if positional != "" && (leaf == nil || len(leaf.Subcommands) > 0) {
		// "issue sever web3 --dns x": the flag is unknown because the
		// subcommand is; that is the mistake to name.
		return unknownSubcommand(names, positional, subcommands(app, leaf))
	}
	return unknownFlag(names, unknown, flagsOf(leaf), app.Flags)
}

// commandNames returns the words that name the command of path (see
// commandPath), "minica issue client", each command by its own name even
// when an alias was typed.
func commandNames(app *cli.App, tokens []string, path []int) []string {
	names := []string{app.Name}
	cmds := app.Commands
	for _, i := range path {
		cmd := findCommand(cmds, tokens[i])
		names = append(names, cmd.Name)
		cmds = cmd.Subcommands
	}
	return names
}

func flagsOf(leaf *cli.Command) []cli.Flag {
	if leaf == nil {
		return nil
	}
	return leaf.Flags
}

func subcommands(app *cli.App, leaf *cli.Command) []*cli.Command {
	if leaf == nil {
		return app.Commands
	}
	return leaf.Subcommands
}

// commandError is a usage error of the command that names (as
// leafCommand) spell; its default hint is that command's --help.
func commandError(names []string, err error) error {
	return &usageError{err: err, command: strings.Join(names, " ")}
}

// missingValue is the error of a flag given last, or followed by another
// flag, that needs a value.
func missingValue(names []string, tok string) error {
	return commandError(names, fmt.Errorf("%s needs a value", tok))
}

// unknownSubcommand is the error of a word that is not a subcommand of
// the command names spell (nor a command, at the top), with the nearest
// one as the hint when one is near. missingSubcommand says the same.
func unknownSubcommand(names []string, word string, cmds []*cli.Command) error {
	err := commandError(names, fmt.Errorf("%s has no subcommand %q", strings.Join(names, " "), word))
	if len(names) == 1 {
		err = commandError(names, fmt.Errorf("unknown command %q", word))
	}
	if near := nearestCommand(word, cmds); near != "" {
		return withHint(err, "did you mean '%s %s'?", strings.Join(names, " "), near)
	}
	return err
}

// unknownFlag is the error of tok, a flag that neither the command names
// spell (flags) nor the app (global) has, in the words it was typed: the
// rule about secrets when it looks like a password or PIN the command can
// read from a file, else the nearest flag when one is near (edit
// distance, as commands), else just the fact; the hint is then the
// command's --help.
func unknownFlag(names []string, tok string, flags, global []cli.Flag) error {
	typed, _, _ := strings.Cut(tok, "=") // never echo a value: it may be a secret
	name := flagName(tok)
	if isSecretFlag(name) {
		if sources := secretSources(name, flags); len(sources) > 0 {
			return withHint(commandError(names, fmt.Errorf("%s is not a flag: secrets are never flag values, which ps and the shell history show", typed)),
				"use %s", strings.Join(sources, ", or "))
		}
	}
	err := fmt.Errorf("flag provided but not defined: %s", typed)
	if near := nearestFlag(name, append(slices.Clone(flags), global...)); near != "" {
		err = fmt.Errorf("%w (did you mean --%s?)", err, near)
	}
	return commandError(names, err)
}

// nearestFlag is the visible flag name nearest to name by edit distance,
// under the bound of nearestCommand, or "".
func nearestFlag(name string, flags []cli.Flag) string {
	best, bestDist := "", 3
	if len(name) <= 3 {
		bestDist = 2
	}
	for _, f := range flags {
		if vf, ok := f.(cli.VisibleFlag); ok && !vf.IsVisible() {
			continue
		}
		for _, n := range f.Names() {
			if len(n) < 2 {
				continue
			}
			if d := editDistance(strings.ToLower(name), n); d < bestDist {
				best, bestDist = n, d
			}
		}
	}
	return best
}

// secretWords are the last words of the flags with which other tools take
// a secret as a value (openssl -passout, keytool -storepass, --password).
var secretWords = []string{"password", "passwd", "pass", "passphrase", "passout", "passin", "pwd", "pin", "secret", "storepass", "keypass"}

// isSecretFlag reports whether name, a flag minica does not have, asks for
// a secret as its value: --password, --p12-password, -passout, --pin. The
// names of files (--pasword-file) and the switches --no-password and
// --ask-password are typos of real flags, for nearestFlag.
func isSecretFlag(name string) bool {
	name = strings.ToLower(name)
	if strings.HasPrefix(name, "no-") || strings.HasPrefix(name, "ask-") {
		return false
	}
	words := strings.Split(name, "-")
	return slices.Contains(secretWords, words[len(words)-1])
}

// secretEnvRE finds the environment variables a flag's usage names.
var secretEnvRE = regexp.MustCompile(`\$(MINICA_[A-Z0-9_]+)`)

// secretSources lists, for the hint, the flags of a command that read a
// secret of the kind name asks for (a PIN, else a password) from a file,
// each with the environment variables that may hold it instead.
func secretSources(name string, flags []cli.Flag) []string {
	pin := strings.HasSuffix(strings.ToLower(name), "pin")
	// The file flag of the same secret alone when there is one: --p12-password
	// is --p12-password-file, --password and -passout the CA key's.
	for _, want := range []string{strings.ToLower(name) + "-file", "password-file", "pin-file"} {
		if f := findFlag(flags, "--"+want); f != nil && strings.Contains(want, "pin") == pin {
			flags = []cli.Flag{f}
			break
		}
	}
	var out []string
	for _, f := range flags {
		fname := f.Names()[0]
		if !strings.HasSuffix(fname, "-file") || strings.Contains(fname, "pin") != pin ||
			!strings.Contains(fname, "password") && !strings.Contains(fname, "pin") {
			continue
		}
		src := "--" + fname + " FILE"
		if envs := secretEnvs(f); len(envs) > 0 {
			src += " or the " + strings.Join(envs, " or ") + " environment variable"
		}
		out = append(out, src)
	}
	return out
}

// secretEnvs are the environment variables that stand for the file of f:
// those its usage names, else those of the CA key's password and PIN
// (passwordFileFlag, pinFileFlag), whose usage names none.
func secretEnvs(f cli.Flag) []string {
	usage := ""
	if df, ok := f.(cli.DocGenerationFlag); ok {
		usage = df.GetUsage()
	}
	var envs []string
	for _, m := range secretEnvRE.FindAllStringSubmatch(usage, -1) {
		envs = append(envs, m[1])
	}
	switch {
	case len(envs) > 0:
	case strings.HasPrefix(usage, "read the CA key password"):
		envs = []string{"MINICA_PASSWORD"}
	case strings.HasPrefix(usage, "read the PIN"):
		envs = []string{pinEnv}
	}
	return envs
}

// maxNameScan bounds how many records a suggestion for a mistyped name
// reads: on a CA of a million certificates the error comes at once, with
// suggestions from part of it ('minica list' still shows every name).
const maxNameScan = 20000

// nearestNames returns the names of the CA's certificates nearest to name
// by edit distance (at most 2 edits, 1 for short names), nearest first,
// at most three; nil when none is near or the records cannot be read.
func nearestNames(authority *ca.CA, name string) []string {
	bound := 3
	if len(name) <= 3 {
		bound = 2
	}
	dist := map[string]int{}
	n := 0
	for r, err := range authority.Records() {
		if err != nil || n == maxNameScan {
			break
		}
		n++
		if _, seen := dist[r.Name]; seen || r.Status == ca.StatusVoid {
			continue
		}
		dist[r.Name] = editDistance(strings.ToLower(name), strings.ToLower(r.Name))
	}
	var near []string
	for nm, d := range dist {
		if d < bound && nm != name {
			near = append(near, nm)
		}
	}
	slices.SortFunc(near, func(a, b string) int {
		if c := dist[a] - dist[b]; c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	return near[:min(len(near), 3)]
}

// didYouMeanNames is the "did you mean" of nearestNames, or "".
func didYouMeanNames(authority *ca.CA, name string) string {
	near := nearestNames(authority, name)
	if len(near) == 0 {
		return ""
	}
	return "did you mean " + strings.Join(near, " or ") + "?"
}

// unknownNameHint gives err, when it says that arg names no certificate
// of the CA (a ca.NotFoundError for a name), the next step: the nearest
// names, and 'minica list'. Every command that looks up a certificate a
// person named passes the error of the lookup through it; other errors
// are returned as they are.
func unknownNameHint(authority *ca.CA, err error) error {
	var nf *ca.NotFoundError
	if !errors.As(err, &nf) || nf.Kind != 0 {
		return err
	}
	hint := "'minica list' shows the names of the CA's certificates"
	if dym := didYouMeanNames(authority, nf.Arg); dym != "" {
		hint = dym + " " + hint
	}
	return withHint(err, "%s", hint)
}

// serverCertNameHint puts the nearest names first in the hint of err when
// it says that the --server-cert name has no certificate at all (a typo,
// most likely); authority may be nil (no CA directory in use).
func serverCertNameHint(authority *ca.CA, err error) error {
	var none *ca.NoServerCertError
	if authority == nil || !errors.As(err, &none) || len(none.Records) > 0 {
		return err
	}
	return nearestNamesFirst(authority, none.Name, err)
}

// nearestNamesFirst puts the names of the CA nearest to name before the
// hint err has (if any): name has no certificate at all.
func nearestNamesFirst(authority *ca.CA, name string, err error) error {
	dym := didYouMeanNames(authority, name)
	if dym == "" {
		return err
	}
	if prev := hintFor(err); prev != "" {
		return withHint(err, "%s If not, %s", dym, prev)
	}
	return withHint(err, "%s", dym)
}

// flagInMessageRE finds a flag named in a message of Go's flag package,
// which writes "-name" whether "-name" or "--name" was typed.
var flagInMessageRE = regexp.MustCompile(`(for flag|for|argument:|defined:) -([A-Za-z0-9][A-Za-z0-9-]+)`)

// doubleDash spells the flags named in msg, a message of Go's flag package
// (through urfave/cli), as minica's help and docs do: --name.
func doubleDash(msg string) string {
	return flagInMessageRE.ReplaceAllString(msg, "$1 --$2")
}
