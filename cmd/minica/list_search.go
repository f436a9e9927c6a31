package main

import (
	"errors"
	"fmt"

	"github.com/urfave/cli/v2"

	"minica/ca"
)

// searchFlags are --email and --prefix, which list and revoke share.
func searchFlags(verb string) []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "email", Usage: verb + " the certificates whose SANs hold `ADDRESS` (in any case)"},
		&cli.StringFlag{Name: "prefix", Usage: verb + " the certificates whose names start with `PREFIX` (exactly)"},
	}
}

// recordSearch is what --email or --prefix asked for: the certificates
// found by a property of their records rather than by one name.
type recordSearch struct {
	flag  string // "--email" or "--prefix"
	value string
}

// String names the search in messages, as flags: --email "simon@example.com".
func (s *recordSearch) String() string { return fmt.Sprintf("%s %q", s.flag, s.value) }

// what says what was searched, for "no certificate ..." messages.
func (s *recordSearch) what() string {
	if s.flag == "--email" {
		return fmt.Sprintf("has the email address %q (in any case) in its SANs", s.value)
	}
	return fmt.Sprintf("has a name starting with %q", s.value)
}

// find runs the search in authority (see ca.RecordsByEmail and
// ca.RecordsByNamePrefix).
func (s *recordSearch) find(authority *ca.CA) ([]*ca.Record, error) {
	if s.flag == "--email" {
		return authority.RecordsByEmail(s.value)
	}
	return authority.RecordsByNamePrefix(s.value)
}

// parseSearch returns the search of --email or --prefix, checked, or nil
// when neither is set.
func parseSearch(c *cli.Context) (*recordSearch, error) {
	email, prefix := c.IsSet("email"), c.IsSet("prefix")
	switch {
	case email && prefix:
		return nil, usagef(c, "--email and --prefix cannot be combined: search by one of them")
	case email:
		if err := ca.ValidateEmail(c.String("email")); err != nil {
			return nil, usagef(c, "--email: %v", err)
		}
		return &recordSearch{flag: "--email", value: c.String("email")}, nil
	case prefix:
		err := ca.ValidateNamePrefix(c.String("prefix"))
		if errors.Is(err, ca.ErrNameAt) {
			return nil, withHint(usagef(c, "--prefix: %w", err), "to find a person's certificates by address, use --email")
		}
		if err != nil {
			return nil, usagef(c, "--prefix: %w", err)
		}
		return &recordSearch{flag: "--prefix", value: c.String("prefix")}, nil
	}
	return nil, nil
}
