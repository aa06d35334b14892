package identity

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/vlmfleet/vlmfleet/controller/access"
	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/controller/store"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// JoinRefusedError is a join the controller refuses, with the status it
// answers and the one line the device shows.
type JoinRefusedError struct {
	Status int
	Msg    string
}

func (e *JoinRefusedError) Error() string { return e.Msg }

// errJoinUnknown is the answer to a token this controller does not know
// and to a wrong secret alike, so that the endpoint cannot tell which
// token ids exist.
var errJoinUnknown = &JoinRefusedError{http.StatusUnauthorized,
	"the join token is unknown to this controller or its secret is wrong (a join string for another controller, or mistyped): " +
		"ask the controller's operator for a new one (vlmfleet join-token create)"}

// Join enrols the device that req describes with the join token it names:
// the agent id gets the device's public key as its NATS user, and the
// answer says how the device reaches NATS. host is the controller's
// address as the device reached it (its Host header), remote the
// device's address, both for the record. A refusal changes nothing.
func (reg *Registry) Join(ctx context.Context, req protocol.JoinRequest, host, remote string) (protocol.JoinAnswer, error) {
	if err := reg.canEnrol(req.AgentID); err != nil {
		return protocol.JoinAnswer{}, err
	}
	now := time.Now().UTC()
	e := store.Enrolment{AgentID: req.AgentID, PublicKey: req.PublicKey, At: now, TokenID: req.TokenID, RemoteAddr: remote}
	ctlPub, err := reg.ctlKey.PublicKey()
	if err != nil {
		return protocol.JoinAnswer{}, fmt.Errorf("controller: join: %w", err)
	}
	var labels map[string]string
	err = reg.enrolKey(ctx, req.AgentID, req.PublicKey, "join token "+req.TokenID, func() (store.Identity, error) {
		prev, err := reg.store.Join(e, func(t store.JoinToken, prev, holder store.Identity) error {
			if err := admitJoin(t, joinClaim{prev: prev, keyHolder: holder, controllerKey: ctlPub}, req, now); err != nil {
				return err
			}
			labels = t.Labels
			return nil
		})
		if errors.Is(err, store.ErrNotFound) {
			secretMatches(req.Secret, "") // as long as a wrong secret takes
			return prev, errJoinUnknown
		}
		return prev, err
	})
	if err != nil {
		var refused *JoinRefusedError
		if errors.As(err, &refused) {
			reg.log.Warn().Str("join_token", req.TokenID).Str("agent", req.AgentID).Str("remote", remote).Str("reason", refused.Msg).Msg("join refused")
		}
		return protocol.JoinAnswer{}, err
	}
	a := protocol.JoinAnswer{AgentID: req.AgentID, PublicKey: req.PublicKey, NATSURL: reg.natsURLFor(host), Labels: labels}
	if reg.tls.NATS {
		a.CAFingerprint = reg.tls.Fingerprint()
	}
	return a, nil
}

// joinClaim is what a join's key and id meet in the store: the identity
// the agent id has (zero when none), another agent id's identity with the
// same public key (zero when none), and the controller's own public key.
type joinClaim struct {
	prev, keyHolder store.Identity
	controllerKey   string
}

// admitJoin decides a join: the secret first, so that nothing about a
// token is told to whoever lacks it, then the token's state, then the
// key and the agent id.
func admitJoin(t store.JoinToken, claim joinClaim, req protocol.JoinRequest, now time.Time) error {
	if !secretMatches(req.Secret, t.SecretSHA256) {
		return errJoinUnknown
	}
	if err := admitToken(t, now); err != nil {
		return err
	}
	if err := admitKey(claim, req.PublicKey); err != nil {
		return err
	}
	return admitAgentID(t, claim.prev, req)
}

func refuseJoin(status int, format string, args ...any) error {
	return &JoinRefusedError{status, fmt.Sprintf(format, args...)}
}

// admitToken refuses a token that can enrol no more.
func admitToken(t store.JoinToken, now time.Time) error {
	switch joinTokenState(t, now) {
	case api.JoinTokenRevoked:
		return refuseJoin(http.StatusForbidden, "join token %s was revoked at %s: ask the controller's operator for a new join string (vlmfleet join-token create)",
			t.ID, t.RevokedAt.Format(time.RFC3339))
	case api.JoinTokenExpired:
		return refuseJoin(http.StatusForbidden, "join token %s expired at %s: ask the controller's operator for a new join string (vlmfleet join-token create --ttl ...)",
			t.ID, t.ExpiresAt.Format(time.RFC3339))
	case api.JoinTokenUsedUp:
		return refuseJoin(http.StatusForbidden, "join token %s is used up (%d of %d enrolments): ask the controller's operator for a new join string (vlmfleet join-token create --uses N)",
			t.ID, t.Used, t.Uses)
	}
	return nil
}

// admitKey binds a public key to one identity: nats-server keeps one user
// per key, so a key enrolled twice would give one device the rights of
// another (or of the controller). The refusal does not name the holder:
// public keys are readable, agent ids need not be.
func admitKey(claim joinClaim, pub string) error {
	switch {
	case pub == claim.controllerKey:
		return refuseJoin(http.StatusConflict, "the public key is the controller's own: a device joins with a key it made itself (vlmfleet agent --join makes one)")
	case claim.keyHolder.AgentID != "" && claim.keyHolder.Active():
		return refuseJoin(http.StatusConflict, "the public key is already enrolled under another agent id: each device joins with a key of its own "+
			"(vlmfleet agent --join makes a new one at each join)")
	case claim.keyHolder.AgentID != "":
		return refuseJoin(http.StatusForbidden, "the public key was revoked, and a revoked key never enrols again: "+
			"the device joins with a new one (vlmfleet agent --join makes a new one at each join)")
	}
	return nil
}

// admitAgentID refuses to change the key of an agent id enrolled under
// another key, unless the token re-enrols, and to reinstate a revoked id
// with its old key: a stolen device that kept a lab's join string stays
// out.
func admitAgentID(t store.JoinToken, prev store.Identity, req protocol.JoinRequest) error {
	switch {
	case prev.AgentID == "":
		return nil
	case !prev.Active() && (!t.Reenrol || prev.PublicKey == req.PublicKey):
		return refuseJoin(http.StatusForbidden, "agent id %s was revoked at %s: it enrols again only with a new key (vlmfleet agent --join makes one) "+
			"and a token made by `vlmfleet join-token create --reenrol`",
			req.AgentID, prev.RevokedAt.Format(time.RFC3339))
	case prev.Active() && prev.PublicKey != req.PublicKey && !t.Reenrol:
		return refuseJoin(http.StatusConflict, "agent id %s is already enrolled (since %s) under another key: start this device with another --id, "+
			"or, to replace that agent's key, join with a token made by `vlmfleet join-token create --reenrol`", req.AgentID, prev.CreatedAt.Format(time.RFC3339))
	}
	return nil
}

// dummySecretSum stands in for an unknown token's hash.
var dummySecretSum = sha256.Sum256([]byte("vlmfleet: no such join token"))

// secretMatches compares the secret's SHA-256 with sumHex in constant
// time; an empty or malformed sumHex compares with a stand-in and fails.
func secretMatches(secret, sumHex string) bool {
	want, err := hex.DecodeString(sumHex)
	ok := err == nil && len(want) == sha256.Size
	if !ok {
		want = dummySecretSum[:]
	}
	got := sha256.Sum256([]byte(secret))
	return subtle.ConstantTimeCompare(got[:], want) == 1 && ok
}

// natsURLFor is the NATS URL to give a device that reached the API at
// host: the embedded server's, with the device's name for the controller
// when the server listens on every address (its own URL then says
// 127.0.0.1, which is the device itself). The certificate names the
// host, since the device's TLS check of the API passed with it.
func (reg *Registry) natsURLFor(host string) string {
	natsURL, natsHost := reg.hooks.NATSURL(), reg.hooks.NATSHost()
	ip := net.ParseIP(natsHost)
	if natsHost != "" && (ip == nil || !ip.IsUnspecified()) {
		return natsURL
	}
	u, err := url.Parse(natsURL)
	if err != nil || access.HostOnly(host) == "" {
		return natsURL
	}
	u.Host = net.JoinHostPort(access.HostOnly(access.NormalHost(host)), u.Port())
	return u.String()
}
