package signin

import (
	"strings"
	"testing"
)

func TestMappingMap(t *testing.T) {
	base := func(extra map[string]any) map[string]any {
		c := map[string]any{"email": "simon@example.com", "email_verified": true, "name": "Simon Zeller"}
		for k, v := range extra {
			if v == nil {
				delete(c, k)
			} else {
				c[k] = v
			}
		}
		return c
	}
	domains := Mapping{AllowDomains: []string{"Example.com"}}
	groups := Mapping{AllowDomains: []string{"example.com"}, GroupsClaim: "groups", AllowGroups: []string{"staff", "eng"}, DenyGroups: []string{"contractors"}, GroupsToOU: true}
	tests := []struct {
		name    string
		m       Mapping
		claims  map[string]any
		want    Person
		wantErr string // the refusal's code
	}{
		{name: "allowed", m: domains, claims: base(nil), want: Person{Email: "simon@example.com", CommonName: "Simon Zeller"}},
		{name: "domain in another case", m: domains, claims: base(map[string]any{"email": "Simon@EXAMPLE.COM"}), want: Person{Email: "Simon@EXAMPLE.COM", CommonName: "Simon Zeller"}},
		{name: "no name: the email", m: domains, claims: base(map[string]any{"name": nil}), want: Person{Email: "simon@example.com", CommonName: "simon@example.com"}},
		{name: "a name no subject may hold: the email", m: domains, claims: base(map[string]any{"name": "a\u202eb"}), want: Person{Email: "simon@example.com", CommonName: "simon@example.com"}},
		{name: "another name claim", m: Mapping{AllowDomains: []string{"example.com"}, NameClaim: "preferred_username"}, claims: base(map[string]any{"preferred_username": "szeller"}), want: Person{Email: "simon@example.com", CommonName: "szeller"}},
		{name: "any domain", m: Mapping{AllowAnyDomain: true}, claims: base(map[string]any{"email": "x@other.org"}), want: Person{Email: "x@other.org", CommonName: "Simon Zeller"}},
		{name: "no email", m: domains, claims: base(map[string]any{"email": nil}), wantErr: "no-email"},
		{name: "email not a string", m: domains, claims: base(map[string]any{"email": 7}), wantErr: "no-email"},
		{name: "bad email", m: domains, claims: base(map[string]any{"email": "not an address"}), wantErr: "bad-email"},
		{name: "email_verified false", m: domains, claims: base(map[string]any{"email_verified": false}), wantErr: "email-unverified"},
		{name: "email_verified missing", m: domains, claims: base(map[string]any{"email_verified": nil}), wantErr: "email-unverified"},
		{name: "email_verified a string", m: domains, claims: base(map[string]any{"email_verified": "true"}), wantErr: "email-unverified"},
		{name: "another verified claim", m: Mapping{AllowDomains: []string{"example.com"}, VerifiedClaim: "xms_edov"}, claims: base(nil), wantErr: "email-unverified"},
		{name: "another domain", m: domains, claims: base(map[string]any{"email": "simon@example.org"}), wantErr: "domain"},
		{name: "a subdomain", m: domains, claims: base(map[string]any{"email": "simon@eu.example.com"}), wantErr: "domain"},
		{name: "domain as a suffix", m: domains, claims: base(map[string]any{"email": "simon@badexample.com"}), wantErr: "domain"},
		{name: "allowing group to OU", m: groups, claims: base(map[string]any{"groups": []any{"eng", "x", "eng"}}), want: Person{Email: "simon@example.com", CommonName: "Simon Zeller", OrganizationalUnit: []string{"eng"}}},
		{name: "one group as a string", m: groups, claims: base(map[string]any{"groups": "staff"}), want: Person{Email: "simon@example.com", CommonName: "Simon Zeller", OrganizationalUnit: []string{"staff"}}},
		{name: "denied group wins", m: groups, claims: base(map[string]any{"groups": []any{"staff", "contractors"}}), wantErr: "group-denied"},
		{name: "no allowing group", m: groups, claims: base(map[string]any{"groups": []any{"x"}}), wantErr: "group"},
		{name: "no groups claim", m: groups, claims: base(nil), wantErr: "group"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, no := tt.m.Map(tt.claims)
			if tt.wantErr != "" {
				if no == nil || no.Code != tt.wantErr || no.Reason == "" {
					t.Fatalf("Map() = %+v, %v; want refusal %q with a reason", got, no, tt.wantErr)
				}
				return
			}
			if no != nil || got.Email != tt.want.Email || got.CommonName != tt.want.CommonName || strings.Join(got.OrganizationalUnit, ",") != strings.Join(tt.want.OrganizationalUnit, ",") {
				t.Fatalf("Map() = %+v, %v; want %+v", got, no, tt.want)
			}
		})
	}
}

func TestMappingCheck(t *testing.T) {
	tests := []struct {
		name    string
		m       Mapping
		wantErr string
	}{
		{"domains", Mapping{AllowDomains: []string{"example.com"}}, ""},
		{"any", Mapping{AllowAnyDomain: true}, ""},
		{"neither", Mapping{}, "no allowed email domain"},
		{"both", Mapping{AllowDomains: []string{"example.com"}, AllowAnyDomain: true}, "exclude each other"},
		{"a bad domain", Mapping{AllowDomains: []string{"exa mple.com"}}, `invalid allowed email domain "exa mple.com"`},
		{"a wildcard", Mapping{AllowDomains: []string{"*.example.com"}}, `invalid allowed email domain "*.example.com"`},
		{"groups without the claim", Mapping{AllowAnyDomain: true, AllowGroups: []string{"a"}}, "need the groups claim"},
		{"OU without allowed groups", Mapping{AllowAnyDomain: true, GroupsClaim: "groups", GroupsToOU: true}, "groups as OU need allowed groups"},
		{"an OU no subject may hold", Mapping{AllowAnyDomain: true, GroupsClaim: "groups", AllowGroups: []string{"a\x00"}, GroupsToOU: true}, "invalid organizational unit"},
	}
	for _, tt := range tests {
		err := tt.m.Check()
		if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("%s: Check() = %v; want %q", tt.name, err, tt.wantErr)
		}
	}
}
