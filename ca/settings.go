package ca

import (
	"encoding/json"
	"fmt"
	"time"
)

const settingsFile = "settings.json"

// Defaults for new CAs. ServerValidity stays within Apple's 825-day limit
// for TLS server certificates (support.apple.com/HT210176).
const (
	DefaultCAValidity     = 10 * 365 * 24 * time.Hour
	DefaultServerValidity = 825 * 24 * time.Hour
	DefaultClientValidity = 365 * 24 * time.Hour
	DefaultCRLLifetime    = 7 * 24 * time.Hour
)

// Settings are a CA's defaults, kept in settings.json.
type Settings struct {
	Version        int      `json:"version"`
	KeyType        KeyType  `json:"key_type"`        // default leaf key type
	ServerValidity Duration `json:"server_validity"` // default server certificate lifetime
	ClientValidity Duration `json:"client_validity"` // default client certificate lifetime
	CRLLifetime    Duration `json:"crl_lifetime"`    // nextUpdate - thisUpdate of published CRLs
	CRLURL         string   `json:"crl_url,omitempty"`
	OCSPURL        string   `json:"ocsp_url,omitempty"`   // AIA OCSP of new leaves
	EnrollURL      string   `json:"enroll_url,omitempty"` // base of enrollment links (serve's HTTPS address)
	// Role is the CA's place in a hierarchy; "" for a CA of its own.
	Role Role `json:"role,omitempty"`
	// Store is the issuance database: "" for the CA directory's files,
	// or the URL of an engine's store, such as a postgres:// URL without
	// a password (see CheckStore).
	Store string `json:"store,omitempty"`
	// DeltaCRL says when revocations sign delta CRLs (see DeltaSettings).
	DeltaCRL DeltaSettings `json:"delta_crl,omitzero"`
}

// DefaultSettings returns the settings of a new CA.
func DefaultSettings() Settings {
	return Settings{
		Version:        1,
		KeyType:        ECDSAP256,
		ServerValidity: Duration(DefaultServerValidity),
		ClientValidity: Duration(DefaultClientValidity),
		CRLLifetime:    Duration(DefaultCRLLifetime),
	}
}

func parseSettings(data []byte) (Settings, error) {
	var s Settings
	if err := json.Unmarshal(data, &s); err != nil {
		return s, err
	}
	if s.Version != 1 {
		return s, fmt.Errorf("unsupported settings version %d", s.Version)
	}
	if _, err := ParseKeyType(string(s.KeyType)); err != nil {
		return s, err
	}
	if s.Role != "" && s.Role != RoleRoot && s.Role != RoleIntermediate {
		return s, fmt.Errorf("unknown role %q: want root or intermediate", s.Role)
	}
	if s.ServerValidity <= 0 || s.ClientValidity <= 0 || s.CRLLifetime <= 0 {
		return s, fmt.Errorf("validities and the CRL lifetime must be positive")
	}
	return s, nil
}

// Duration is a time.Duration that reads and writes as text such as "90d".
type Duration time.Duration

// MarshalText writes the duration as FormatDuration does, e.g. "825d".
func (d Duration) MarshalText() ([]byte, error) { return []byte(FormatDuration(time.Duration(d))), nil }

// UnmarshalText reads the syntax of ParseDuration.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := ParseDuration(string(b))
	*d = Duration(v)
	return err
}
