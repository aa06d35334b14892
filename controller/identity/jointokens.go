package identity

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/controller/store"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// NoJoinTLSError says that the controller cannot issue join tokens
// because its API has no TLS: a device trusts the controller by the CA
// fingerprint the join string carries, and the secret must not cross the
// network in clear. HTTP 409.
type NoJoinTLSError struct{}

func (*NoJoinTLSError) Error() string {
	return "join tokens need the controller's API over TLS (a device trusts it by the CA fingerprint in the join string): " +
		"start the controller with --tls on, or listening off loopback (--http), where TLS is the default"
}

// TokenRequestError is what is wrong with a join-token request, and the
// HTTP status it answers.
type TokenRequestError struct {
	Status int
	Err    error
}

func (e *TokenRequestError) Error() string { return e.Err.Error() }
func (e *TokenRequestError) Unwrap() error { return e.Err }

// CreateJoinToken makes a join token as req asks and returns it with its
// join string, which carries joinURL (the controller's https address as
// devices reach it), the secret and the CA's fingerprint. The secret is
// kept only as its hash: the join string is shown this once.
func (reg *Registry) CreateJoinToken(ctx context.Context, req api.JoinTokenRequest, joinURL string) (api.JoinTokenCreated, error) {
	if auth := reg.NATSAuth(); auth != api.NATSAuthNkeys {
		return api.JoinTokenCreated{}, &NoNATSAuthorityError{Auth: auth}
	}
	pin := reg.tls.Fingerprint()
	if !reg.tls.HTTP || pin == "" {
		return api.JoinTokenCreated{}, &NoJoinTLSError{}
	}
	if err := protocol.ValidateJoinURL(joinURL); err != nil {
		return api.JoinTokenCreated{}, &TokenRequestError{http.StatusBadRequest, fmt.Errorf("join token: url %q: %w", joinURL, err)}
	}
	id, secret, err := newJoinSecret()
	if err != nil {
		return api.JoinTokenCreated{}, fmt.Errorf("controller: join token: %w", err)
	}
	now := time.Now().UTC()
	sum := sha256.Sum256([]byte(secret))
	t := store.JoinToken{ID: id, SecretSHA256: hex.EncodeToString(sum[:]), CreatedAt: now,
		ExpiresAt: now.Add(time.Duration(req.TTLSeconds) * time.Second), Uses: req.Uses, Labels: req.Labels, Reenrol: req.Reenrol}
	if err := reg.store.PutJoinToken(t); err != nil {
		return api.JoinTokenCreated{}, err
	}
	reg.log.Info().Str("join_token", id).Time("expires", t.ExpiresAt).Int("uses", t.Uses).Bool("reenrol", t.Reenrol).
		Str("url", joinURL).Msg("join token created")
	js := protocol.JoinString{URL: joinURL, TokenID: id, Secret: secret, CAPin: pin}
	return api.JoinTokenCreated{JoinTokenView: joinTokenView(t, now), Join: js.String(), URL: joinURL}, nil
}

// newJoinSecret makes a token id (6 random bytes, hex) and a secret (32
// random bytes, base64url): the secret is too long to guess, so its plain
// SHA-256 is all the store needs.
func newJoinSecret() (id, secret string, err error) {
	b := make([]byte, 6+32)
	if _, err := rand.Read(b); err != nil {
		return "", "", err
	}
	return hex.EncodeToString(b[:6]), base64.RawURLEncoding.EncodeToString(b[6:]), nil
}

// JoinTokens lists every join token, without secrets.
func (reg *Registry) JoinTokens(ctx context.Context) ([]api.JoinTokenView, error) {
	ts, err := reg.store.JoinTokens(ctx)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	out := make([]api.JoinTokenView, 0, len(ts))
	for _, t := range ts {
		out = append(out, joinTokenView(t, now))
	}
	return out, nil
}

// RevokeJoinToken makes token id refuse every join from now on; the
// agents it enrolled keep their credentials (revoke those with
// agent-creds revoke). An unknown id is ErrNotFound.
func (reg *Registry) RevokeJoinToken(_ context.Context, id string) (api.JoinTokenView, error) {
	if err := protocol.ValidateJoinTokenID(id); err != nil {
		return api.JoinTokenView{}, &TokenRequestError{http.StatusBadRequest, err}
	}
	t, err := reg.store.RevokeJoinToken(id, time.Now().UTC())
	if errors.Is(err, store.ErrNotFound) {
		return api.JoinTokenView{}, &TokenRequestError{http.StatusNotFound, fmt.Errorf("no join token %s (vlmfleet join-token list shows them)", id)}
	}
	if err != nil {
		return api.JoinTokenView{}, err
	}
	reg.log.Info().Str("join_token", id).Msg("join token revoked")
	return joinTokenView(t, time.Now()), nil
}

func joinTokenView(t store.JoinToken, now time.Time) api.JoinTokenView {
	v := api.JoinTokenView{ID: t.ID, CreatedAt: t.CreatedAt, ExpiresAt: t.ExpiresAt, Uses: t.Uses, Used: t.Used,
		UsesLeft: max(t.Uses-t.Used, 0), Labels: t.Labels, Reenrol: t.Reenrol, RevokedAt: t.RevokedAt,
		State: joinTokenState(t, now), Enrolments: []api.JoinEnrolled{}}
	if v.Labels == nil {
		v.Labels = map[string]string{}
	}
	for _, e := range t.Enrolled {
		v.Enrolments = append(v.Enrolments, api.JoinEnrolled{AgentID: e.AgentID, PublicKey: e.PublicKey, At: e.At, RemoteAddr: e.RemoteAddr})
	}
	return v
}

// joinTokenState is why a token refuses joins, or JoinTokenUsable; a
// revoked token is revoked whatever else holds.
func joinTokenState(t store.JoinToken, now time.Time) string {
	switch {
	case !t.RevokedAt.IsZero():
		return api.JoinTokenRevoked
	case !now.Before(t.ExpiresAt):
		return api.JoinTokenExpired
	case t.Used >= t.Uses:
		return api.JoinTokenUsedUp
	}
	return api.JoinTokenUsable
}
