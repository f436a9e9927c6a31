package signin

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"minica/ca"
)

// Mapping turns the claims of a verified ID token into the identity of a
// person's certificates, or refuses the person. See docs/sign-in.md.
type Mapping struct {
	// AllowDomains are the email domains whose people may sign in,
	// compared exactly, in any case (a subdomain is another domain).
	// Empty allows none, unless AllowAnyDomain.
	AllowDomains   []string
	AllowAnyDomain bool
	// VerifiedClaim is the boolean claim that says the provider verified
	// the email; "" means email_verified. A missing claim is false.
	VerifiedClaim string
	// NameClaim is the claim whose text becomes the common name; ""
	// means name. Without it, or when it is no valid subject text, the
	// email is the common name.
	NameClaim string
	// GroupsClaim names a claim listing the person's groups; with it,
	// AllowGroups (any of them, when not empty) and DenyGroups (none of
	// them) decide, and GroupsToOU puts the allowing groups in the OU.
	GroupsClaim             string
	AllowGroups, DenyGroups []string
	GroupsToOU              bool
}

// Person is who a signed-in person is on their certificates.
type Person struct {
	Email              string
	CommonName         string
	OrganizationalUnit []string
}

// Refusal is why a person may not sign in: Reason for the page, Code for
// the log.
type Refusal struct {
	Code, Reason string
}

func (r *Refusal) Error() string { return r.Code + ": " + r.Reason }

// Check validates the mapping: domains and groups as they will be
// compared, OUs as subject text.
func (m *Mapping) Check() error {
	if len(m.AllowDomains) == 0 && !m.AllowAnyDomain {
		return errors.New("no allowed email domain: name at least one, or allow any domain explicitly")
	}
	if len(m.AllowDomains) > 0 && m.AllowAnyDomain {
		return errors.New("allowed email domains and any domain exclude each other")
	}
	for _, d := range m.AllowDomains {
		if err := ca.ValidateDNSName(strings.ToLower(d)); err != nil || strings.HasPrefix(d, "*") {
			return fmt.Errorf("invalid allowed email domain %q: want a domain such as example.com", d)
		}
	}
	if m.GroupsClaim == "" && (len(m.AllowGroups) > 0 || len(m.DenyGroups) > 0 || m.GroupsToOU) {
		return errors.New("allowed or denied groups, and groups as OU, need the groups claim")
	}
	if m.GroupsToOU && len(m.AllowGroups) == 0 {
		return errors.New("groups as OU need allowed groups: only the groups that allow are put in the OU")
	}
	if m.GroupsToOU {
		for _, g := range m.AllowGroups {
			if err := ca.ValidateText("organizational unit", g); err != nil {
				return fmt.Errorf("allowed group: %w", err)
			}
		}
	}
	return nil
}

// Map returns the person the claims describe, or why they are refused.
// The claims are those of an ID token that go-oidc verified.
func (m *Mapping) Map(claims map[string]any) (*Person, *Refusal) {
	email, _ := claims["email"].(string)
	if email == "" {
		return nil, &Refusal{"no-email", "Your account at the identity provider gave no email address, and a certificate is issued for an email address."}
	}
	if err := ca.ValidateEmail(email); err != nil {
		return nil, &Refusal{"bad-email", "Your email address cannot be put in a certificate."}
	}
	verified := m.VerifiedClaim
	if verified == "" {
		verified = "email_verified"
	}
	if ok, _ := claims[verified].(bool); !ok {
		return nil, &Refusal{"email-unverified", "The identity provider does not vouch that your email address " + email + " is yours (it is not verified)."}
	}
	domain := strings.ToLower(email[strings.LastIndexByte(email, '@')+1:])
	if !m.AllowAnyDomain && !slices.ContainsFunc(m.AllowDomains, func(d string) bool { return strings.EqualFold(d, domain) }) {
		return nil, &Refusal{"domain", "Certificates are issued here for addresses of " + strings.Join(m.AllowDomains, ", ") + " only, and yours is of " + domain + "."}
	}
	p := &Person{Email: email, CommonName: email}
	nameClaim := m.NameClaim
	if nameClaim == "" {
		nameClaim = "name"
	}
	if name, _ := claims[nameClaim].(string); name != "" && ca.ValidateText("common name", name) == nil {
		p.CommonName = name
	}
	if m.GroupsClaim == "" {
		return p, nil
	}
	groups := stringList(claims[m.GroupsClaim])
	for _, g := range groups {
		if slices.Contains(m.DenyGroups, g) {
			return nil, &Refusal{"group-denied", "Members of the group " + g + " may not get certificates here."}
		}
	}
	if len(m.AllowGroups) == 0 {
		return p, nil
	}
	var allowing []string
	for _, g := range groups {
		if slices.Contains(m.AllowGroups, g) && !slices.Contains(allowing, g) {
			allowing = append(allowing, g)
		}
	}
	if len(allowing) == 0 {
		return nil, &Refusal{"group", "Certificates are issued here to members of " + strings.Join(m.AllowGroups, ", ") + ", and the identity provider lists you in none of them."}
	}
	if m.GroupsToOU {
		p.OrganizationalUnit = allowing
	}
	return p, nil
}

// stringList reads a claim that lists strings (a JSON array, or one
// string); anything else is no list.
func stringList(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case []any:
		var out []string
		for _, e := range v {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}
