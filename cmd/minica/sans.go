package main

import (
	"fmt"
	"io"
	"strings"

	"minica/ca"
)

// sanText is how human output shows a certificate's SANs (as ca.SANs
// lists them): comma-separated, or "none", so that the name minica chose
// by default (a server's NAME as its DNS name) is never a surprise.
func sanText(sans []string) string {
	if len(sans) == 0 {
		return "none"
	}
	return strings.Join(sans, ", ")
}

// warnUnresolvable warns when a server certificate's only names resolve
// nowhere beyond a search domain or a hosts file (ca.UnresolvableNames),
// saying how to issue it with a name anyone can resolve. It never fails:
// such a name can be what the operator wants.
func warnUnresolvable(w io.Writer, r *ca.Record) {
	warnUnresolvableThen(w, r, func(dns string) string {
		return fmt.Sprintf("issue it again with --dns %s --force (or --ip ADDRESS)", dns)
	})
}

// warnUnresolvableThen is warnUnresolvable for what r stands for (a
// certificate, or the one a token will get): again says what to do
// instead, given a full DNS name to suggest.
func warnUnresolvableThen(w io.Writer, r *ca.Record, again func(dns string) string) {
	if r.Profile != ca.Server {
		return
	}
	names := ca.UnresolvableNames(r.SANs)
	if len(names) == 0 {
		return
	}
	var what string
	switch {
	case len(names) > 1:
		what = quoteAll(names) + " are single-label or .invalid DNS names, which resolve only through a search domain or a hosts file"
	case ca.DNSNameReach(names[0]) == ca.ReachNowhere:
		what = fmt.Sprintf("%q never resolves (RFC 6761 reserves .invalid)", names[0])
	default:
		what = fmt.Sprintf("%q is a single-label DNS name, which resolves only through a search domain or a hosts file", names[0])
	}
	warnf(w, "%s; for a name anyone can resolve, %s", what, again(fullNameExample(r.Name, names[0])))
}

// fullNameExample suggests a full DNS name for a certificate named name
// whose DNS name dns does not resolve: name itself when it is one, else
// the first label under example.com, which the person replaces.
func fullNameExample(name, dns string) string {
	if ca.IsHostName(name) && ca.DNSNameReach(name) == ca.ReachDNS && name != "localhost" {
		return name
	}
	label, _, _ := strings.Cut(strings.TrimPrefix(dns, "*."), ".")
	return label + ".example.com"
}

// unresolvableTally gathers, over a batch, the server certificates that
// warnUnresolvable would warn about, so that a batch of thousands warns
// once, naming a few of their DNS names.
type unresolvableTally struct {
	certs int
	names []string // the first few, for the warning
	more  int      // names beyond those
}

const tallyShown = 5

func (t *unresolvableTally) add(r *ca.Record) {
	if r.Profile != ca.Server {
		return
	}
	names := ca.UnresolvableNames(r.SANs)
	if len(names) == 0 {
		return
	}
	t.certs++
	for _, n := range names {
		if len(t.names) < tallyShown {
			t.names = append(t.names, n)
		} else {
			t.more++
		}
	}
}

// warn prints the batch's one warning, if any.
func (t *unresolvableTally) warn(w io.Writer) {
	if t.certs == 0 {
		return
	}
	list := strings.Join(t.names, ", ")
	if t.more > 0 {
		list += fmt.Sprintf(" and %d more", t.more)
	}
	warnf(w, "%d server %s only single-label or .invalid DNS names, which resolve only through a search domain or a hosts file: %s; for names anyone can resolve, revoke them and issue them again with a dns or ip column",
		t.certs, plural(t.certs, "certificate has", "certificates have"), list)
}
