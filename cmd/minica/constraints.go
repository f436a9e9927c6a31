package main

import (
	"net"

	"github.com/urfave/cli/v2"

	"minica/ca"
)

// constraintFlags are the name-constraint flags of init and
// sign-intermediate; constraintValues parses them.
func constraintFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringSliceFlag{Name: "permit-dns", Usage: "permit DNS names in this domain and its subdomains (repeatable)"},
		&cli.StringSliceFlag{Name: "permit-email", Usage: "permit emails at this host (.example.com: its subdomains) or this address (repeatable)"},
		&cli.StringSliceFlag{Name: "permit-uri", Usage: "permit URIs whose host is this one (.example.com: its subdomains) (repeatable)"},
		&cli.StringSliceFlag{Name: "permit-ip", Usage: "permit IP addresses in this CIDR range; 0.0.0.0/0 and ::/0 permit all (repeatable)"},
		&cli.StringSliceFlag{Name: "exclude-dns", Usage: "exclude DNS names in this domain and its subdomains (repeatable)"},
		&cli.StringSliceFlag{Name: "exclude-email", Usage: "exclude emails at this host (.example.com: its subdomains) or this address (repeatable)"},
		&cli.StringSliceFlag{Name: "exclude-uri", Usage: "exclude URIs whose host is this one (.example.com: its subdomains) (repeatable)"},
		&cli.StringSliceFlag{Name: "exclude-ip", Usage: "exclude IP addresses in this CIDR range (repeatable)"},
	}
}

// constraintValues reads the flags of constraintFlags.
func constraintValues(c *cli.Context) (ca.Constraints, error) {
	k := ca.Constraints{
		PermittedDNS:    c.StringSlice("permit-dns"),
		PermittedEmails: c.StringSlice("permit-email"),
		PermittedURIs:   c.StringSlice("permit-uri"),
		ExcludedDNS:     c.StringSlice("exclude-dns"),
		ExcludedEmails:  c.StringSlice("exclude-email"),
		ExcludedURIs:    c.StringSlice("exclude-uri"),
	}
	for _, f := range []struct {
		flag string
		dst  *[]*net.IPNet
	}{{"permit-ip", &k.PermittedIPs}, {"exclude-ip", &k.ExcludedIPs}} {
		for _, cidr := range c.StringSlice(f.flag) {
			_, ipnet, err := net.ParseCIDR(cidr)
			if err != nil {
				return k, usagef(c, "--%s %q: want a CIDR range such as 10.0.0.0/8", f.flag, cidr)
			}
			*f.dst = append(*f.dst, ipnet)
		}
	}
	return k, nil
}
