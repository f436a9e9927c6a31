package acme

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	jose "github.com/go-jose/go-jose/v4"
)

// decodedAccounts keeps accounts decoded, with their keys parsed, by the
// bytes they are stored as. Every request names its account, whose
// object is read from the store each time (so that a deactivation or a
// key change on another replica holds at the next request); only the
// decoding of bytes already seen is saved: the JSON of the account and
// of its key, which were a sixth of a request's work. It holds at most
// decodedAccountsMax entries, and starts afresh when full.
type decodedAccounts struct {
	mu sync.Mutex
	m  map[string]account
}

const decodedAccountsMax = 4096

// decode returns the account stored as data, its jwk parsed from its
// Key; the account is the caller's own copy, the jwk shared and never
// changed.
func (c *decodedAccounts) decode(data []byte) (*account, error) {
	c.mu.Lock()
	a, ok := c.m[string(data)]
	c.mu.Unlock()
	if !ok {
		if err := json.Unmarshal(data, &a); err != nil {
			return nil, err
		}
		a.jwk = new(jose.JSONWebKey)
		if err := a.jwk.UnmarshalJSON(a.Key); err != nil {
			return nil, fmt.Errorf("decoding the account's key: %w", err)
		}
		c.mu.Lock()
		if len(c.m) >= decodedAccountsMax || c.m == nil {
			c.m = make(map[string]account)
		}
		c.m[string(data)] = a
		c.mu.Unlock()
	}
	a.Key = slices.Clone(a.Key)
	a.Contact = slices.Clone(a.Contact)
	a.Pending = slices.Clone(a.Pending)
	return &a, nil
}
