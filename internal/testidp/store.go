package testidp

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"fmt"
	"slices"
	"sync"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/zitadel/oidc/v3/example/server/storage"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// store is zitadel's example storage (auth requests, codes, tokens, client
// secrets) with this package's users, claims, clients and rotating keys in
// place of the stock ones.
type store struct {
	*storage.Storage
	users   users
	clients map[string]*storage.Client

	mu   sync.Mutex
	keys []*signingKey // keys[0] signs; at most one previous key follows
}

var (
	_ op.Storage                   = (*store)(nil)
	_ op.CanSetUserinfoFromRequest = (*store)(nil)
)

func newStore(cfg Config) (*store, error) {
	clients := make(map[string]*storage.Client, len(cfg.Clients))
	for _, c := range cfg.Clients {
		clients[c.ID] = storage.WebClient(c.ID, c.Secret, slices.Clone(c.RedirectURIs)...)
	}
	us := make(users, len(cfg.Users))
	for _, u := range cfg.Users {
		u.Groups = slices.Clone(u.Groups)
		us[u.Username] = &u
	}
	s := &store{
		Storage: storage.NewStorageWithClients(us, clients),
		users:   us,
		clients: clients,
	}
	if err := s.rotate(); err != nil {
		return nil, err
	}
	return s, nil
}

// users is the user store zitadel's example storage checks passwords
// against; the ID of a user is its username.
type users map[string]*User

func (us users) GetUserByID(id string) *storage.User { return us.GetUserByUsername(id) }

func (us users) GetUserByUsername(username string) *storage.User {
	u, ok := us[username]
	if !ok {
		return nil
	}
	return &storage.User{ID: u.Username, Username: u.Username, Password: u.Password,
		Email: u.Email, EmailVerified: u.EmailVerified}
}

// ExampleClientID names the stock storage's JWT-profile service; this
// provider has none.
func (users) ExampleClientID() string { return "" }

// client makes zitadel put the claims of the granted scopes in the ID token
// even though an access token is issued with it, as the providers minica
// meets do (the stock web client leaves them to the userinfo endpoint).
type client struct{ *storage.Client }

func (client) IDTokenUserinfoClaimsAssertion() bool { return true }

// GetClientByClientID implements op.Storage.
func (s *store) GetClientByClientID(_ context.Context, id string) (op.Client, error) {
	c, ok := s.clients[id]
	if !ok {
		return nil, fmt.Errorf("client %q not found", id)
	}
	return client{c}, nil
}

// ClientCredentials refuses the stock storage's built-in service user
// ("sid1"), so that the provider's clients are exactly those of the Config.
func (s *store) ClientCredentials(context.Context, string, string) (op.Client, error) {
	return nil, errors.New("no client may use the client credentials grant")
}

// SetUserinfoFromRequest implements op.CanSetUserinfoFromRequest: the
// claims of the ID token.
func (s *store) SetUserinfoFromRequest(_ context.Context, info *oidc.UserInfo, req op.IDTokenRequest, scopes []string) error {
	return s.fill(info, req.GetSubject(), scopes)
}

// userinfoScopes are the scopes the userinfo endpoint answers for.
var userinfoScopes = []string{oidc.ScopeOpenID, oidc.ScopeEmail, oidc.ScopeProfile}

// SetUserinfoFromToken implements op.Storage: the stock storage checks the
// access token, then the answer is this package's claims.
func (s *store) SetUserinfoFromToken(ctx context.Context, info *oidc.UserInfo, tokenID, subject, origin string) error {
	if err := s.Storage.SetUserinfoFromToken(ctx, info, tokenID, subject, origin); err != nil {
		return err
	}
	*info = oidc.UserInfo{}
	return s.fill(info, subject, userinfoScopes)
}

// fill sets the claims of user subject for scopes, as the package doc lists.
func (s *store) fill(info *oidc.UserInfo, subject string, scopes []string) error {
	u, ok := s.users[subject]
	if !ok {
		return fmt.Errorf("user %q not found", subject)
	}
	info.Subject = u.Username
	if slices.Contains(scopes, oidc.ScopeEmail) && u.Email != "" {
		info.Email = u.Email
		// The struct field is omitted when false; the claim is not.
		info.AppendClaims("email_verified", u.EmailVerified)
	}
	if slices.Contains(scopes, oidc.ScopeProfile) && u.Name != "" {
		info.Name = u.Name
	}
	if len(u.Groups) > 0 {
		info.AppendClaims("groups", slices.Clone(u.Groups))
	}
	return nil
}

// signingKey is an RS256 key; it serves as op.SigningKey.
type signingKey struct {
	id  string
	key *rsa.PrivateKey
}

func newSigningKey() (*signingKey, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, fmt.Errorf("generating an RSA signing key: %w", err)
	}
	return &signingKey{id: rand.Text(), key: key}, nil
}

func (k *signingKey) SignatureAlgorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (k *signingKey) Key() any                                    { return k.key }
func (k *signingKey) ID() string                                  { return k.id }

// publicKey is the published half of a signingKey; it serves as op.Key.
type publicKey struct{ k *signingKey }

func (p publicKey) ID() string                         { return p.k.id }
func (p publicKey) Algorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (p publicKey) Use() string                        { return "sig" }
func (p publicKey) Key() any                           { return &p.k.key.PublicKey }

// rotate makes a new current key and keeps the one before it.
func (s *store) rotate() error {
	k, err := newSigningKey()
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keys = append([]*signingKey{k}, s.keys...)
	s.keys = s.keys[:min(len(s.keys), 2)]
	return nil
}

func (s *store) current() *signingKey {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.keys[0]
}

// SigningKey implements op.Storage: zitadel asks for it at every token.
func (s *store) SigningKey(context.Context) (op.SigningKey, error) { return s.current(), nil }

// SignatureAlgorithms implements op.Storage.
func (s *store) SignatureAlgorithms(context.Context) ([]jose.SignatureAlgorithm, error) {
	return []jose.SignatureAlgorithm{jose.RS256}, nil
}

// KeySet implements op.Storage: the current key and the previous one.
func (s *store) KeySet(context.Context) ([]op.Key, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	keys := make([]op.Key, 0, len(s.keys))
	for _, k := range s.keys {
		keys = append(keys, publicKey{k})
	}
	return keys, nil
}
