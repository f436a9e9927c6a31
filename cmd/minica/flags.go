package main

import (
	"net"
	"time"

	"github.com/urfave/cli/v2"

	"minica/ca"
)

// The flags several commands share, each defined here once. urfave/cli
// keeps parse state on a flag's value (Apply records its default; an
// environment variable sets HasBeenSet), so these are functions that build
// a new value for every command: never keep one in a variable, or two
// commands, or two runs in one process, would share it. jsonFlag is in
// output.go.

// forceFlag is --force of the commands that write files outside the CA
// directory.
func forceFlag() cli.Flag {
	return &cli.BoolFlag{Name: "force", Usage: "replace existing output files"}
}

// passwordFileFlag is --password-file of the commands that load the CA
// key; secrets are never flag values.
func passwordFileFlag() cli.Flag {
	return &cli.StringFlag{
		Name:  "password-file",
		Usage: "read the CA key password from `FILE` (one trailing newline is ignored)",
	}
}

// ipFlag is --ip, the IP address SANs of a server certificate; ipValues
// parses it.
func ipFlag() cli.Flag {
	return &cli.StringSliceFlag{Name: "ip", Usage: "IP address SAN (repeatable)"}
}

// ipValues parses every --ip with ca.ParseIP.
func ipValues(c *cli.Context) ([]net.IP, error) {
	var ips []net.IP
	for _, s := range c.StringSlice("ip") {
		ip, err := ca.ParseIP(s)
		if err != nil {
			return nil, usagef(c, "--ip %v", err)
		}
		ips = append(ips, ip)
	}
	return ips, nil
}

// validityFlag is --validity, a certificate's lifetime, with the default
// given in usage (the profile's, applied by ca when the flag is unset) or
// in value (shown in help); validityValue parses it.
func validityFlag(value, usage string) cli.Flag {
	return &cli.StringFlag{Name: "validity", Value: value, Usage: usage}
}

// validityValue parses --validity with ca.ParseDuration; 0 when it is
// unset and has no default, which ca takes as the profile's validity.
func validityValue(c *cli.Context) (time.Duration, error) {
	v := c.String("validity")
	if v == "" && !c.IsSet("validity") {
		return 0, nil
	}
	d, err := ca.ParseDuration(v)
	if err != nil {
		return 0, usagef(c, "--validity: %v", err)
	}
	return d, nil
}

// keyTypeFlag is --key-type, the algorithm of a key minica generates, with
// its default given in value (shown in help) or, when value is "", in
// usage; keyTypeValue parses it.
func keyTypeFlag(value, usage string) cli.Flag {
	return &cli.StringFlag{Name: "key-type", Value: value, Usage: usage}
}

// leafKeyTypeUsage is --key-type's help where ca picks the default.
const leafKeyTypeUsage = "ecdsa-p256 (default), ecdsa-p384, rsa-2048, rsa-3072, rsa-4096 or ed25519"

// keyTypeValue parses --key-type with ca.ParseKeyType; "" when it is unset
// and has no default, which ca takes as ca.ECDSAP256.
func keyTypeValue(c *cli.Context) (ca.KeyType, error) {
	v := c.String("key-type")
	if v == "" && !c.IsSet("key-type") {
		return "", nil
	}
	kt, err := ca.ParseKeyType(v)
	if err != nil {
		return "", usagef(c, "--key-type: %v", err)
	}
	return kt, nil
}

// The identity flags of a leaf, shared by issue, sign and enroll.

func cnFlag() cli.Flag { return &cli.StringFlag{Name: "cn", Usage: "common name (default: NAME)"} }

func emailFlag() cli.Flag {
	return &cli.StringSliceFlag{Name: "email", Usage: "email SAN (repeatable)"}
}

func uriFlag() cli.Flag { return &cli.StringSliceFlag{Name: "uri", Usage: "URI SAN (repeatable)"} }

func orgFlag() cli.Flag { return &cli.StringSliceFlag{Name: "org", Usage: "organization (O)"} }

func ouFlag() cli.Flag {
	return &cli.StringSliceFlag{Name: "ou", Usage: "organizational unit (OU)"}
}

func noEmailInSubjectFlag() cli.Flag {
	return &cli.BoolFlag{Name: "no-email-in-subject", Usage: "keep the email out of the subject DN (it stays in the SAN)"}
}

// nameForceFlag is --force of the commands that issue under a name: a
// second certificate while the first stays valid.
func nameForceFlag() cli.Flag {
	return &cli.BoolFlag{Name: "force", Usage: "issue even if NAME already has a valid certificate (both stay valid)"}
}
