package ca

import (
	"fmt"
	"testing"
)

// BenchmarkIssueHierarchy issues client certificates under a CA of its own
// and under a name-constrained intermediate, in the same run: the chain's
// constraint checks and the longer chain file must cost little (issue 15
// asks for within 10%).
func BenchmarkIssueHierarchy(b *testing.B) {
	k := Constraints{PermittedDNS: []string{"example.com"}, PermittedEmails: []string{"example.com"}}
	for _, kind := range []string{"single", "intermediate"} {
		b.Run("ca="+kind, func(b *testing.B) {
			var c *CA
			if kind == "single" {
				c, _ = newTestCA(b, InitOptions{Now: fixedClock(hierNow), PermittedDNS: k.PermittedDNS, PermittedEmails: k.PermittedEmails})
				c.Now = fixedClock(hierNow)
			} else {
				_, c = newHierarchy(b, k)
			}
			signer := signerOf(b, c)
			for i := 0; b.Loop(); i++ {
				name := fmt.Sprintf("bench-%d", i)
				if _, err := c.Issue(signer, Request{Name: name, Profile: Client, Emails: []string{name + "@example.com"}}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
