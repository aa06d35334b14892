package api

import (
	"errors"
	"fmt"
	"time"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// Bounds of a join token: how long it may live and how many devices it
// may enrol. A token is a key to the lab while it lives; these keep a
// forgotten one from lasting.
const (
	DefaultJoinTokenTTL = 24 * time.Hour
	MaxJoinTokenTTL     = 30 * 24 * time.Hour
	MaxJoinTokenUses    = 1000
	// MaxJoinTokenBody bounds the body of POST /api/join-tokens.
	MaxJoinTokenBody = 16 << 10
)

// JoinTokenRequest is the body of POST /api/join-tokens.
type JoinTokenRequest struct {
	// TTL is how long the token lives, in seconds (0: DefaultJoinTokenTTL).
	TTLSeconds int64 `json:"ttl_seconds,omitempty"`
	// Uses is how many devices it may enrol (0: 1).
	Uses   int               `json:"uses,omitempty"`
	Labels map[string]string `json:"labels,omitempty"`
	// Reenrol lets the token replace the key of an agent id already
	// enrolled.
	Reenrol bool `json:"reenrol,omitempty"`
	// URL is the controller's HTTPS address as devices reach it, for the
	// join string; empty: the one this request reached, unless loopback
	// (docs/api.md).
	URL string `json:"url,omitempty"`
}

// DecodeJoinTokenRequest reads and checks a JoinTokenRequest, filling the
// defaults.
func DecodeJoinTokenRequest(data []byte) (JoinTokenRequest, error) {
	var r JoinTokenRequest
	if len(data) > 0 {
		if err := DecodeStrict(data, &r); err != nil {
			return JoinTokenRequest{}, fmt.Errorf("join token: %w", err)
		}
	}
	switch {
	case r.TTLSeconds == 0:
		r.TTLSeconds = int64(DefaultJoinTokenTTL / time.Second)
	case r.TTLSeconds < 60 || r.TTLSeconds > int64(MaxJoinTokenTTL/time.Second):
		return JoinTokenRequest{}, fmt.Errorf("join token: ttl %ds: want 1m to %s", r.TTLSeconds, MaxJoinTokenTTL)
	}
	if r.Uses == 0 {
		r.Uses = 1
	}
	if r.Uses < 1 || r.Uses > MaxJoinTokenUses {
		return JoinTokenRequest{}, fmt.Errorf("join token: uses %d: want 1 to %d", r.Uses, MaxJoinTokenUses)
	}
	if err := protocol.ValidateLabels("join token: labels", r.Labels); err != nil {
		return JoinTokenRequest{}, err
	}
	if r.URL != "" {
		if err := protocol.ValidateJoinURL(r.URL); err != nil {
			return JoinTokenRequest{}, errors.New("join token: url: want the controller's https:// address as devices reach it, e.g. https://ctl.lab:8080")
		}
	}
	return r, nil
}

// JoinTokenView is a join token as the API lists it: never its secret.
type JoinTokenView struct {
	ID        string            `json:"id"`
	CreatedAt time.Time         `json:"created_at"`
	ExpiresAt time.Time         `json:"expires_at"`
	Uses      int               `json:"uses"`
	Used      int               `json:"used"`
	UsesLeft  int               `json:"uses_left"`
	Labels    map[string]string `json:"labels"`
	Reenrol   bool              `json:"reenrol"`
	RevokedAt time.Time         `json:"revoked_at,omitzero"`
	// State is usable, expired, used-up or revoked.
	State      string         `json:"state"`
	Enrolments []JoinEnrolled `json:"enrolments"`
}

// Join token states (JoinTokenView.State).
const (
	JoinTokenUsable  = "usable"
	JoinTokenExpired = "expired"
	JoinTokenUsedUp  = "used-up"
	JoinTokenRevoked = "revoked"
)

// JoinEnrolled is one device a token enrolled.
type JoinEnrolled struct {
	AgentID    string    `json:"agent_id"`
	PublicKey  string    `json:"public_key"`
	At         time.Time `json:"at"`
	RemoteAddr string    `json:"remote_addr"`
}

// JoinTokenCreated answers POST /api/join-tokens: the token and its join
// string, which holds the secret and is shown this once.
type JoinTokenCreated struct {
	JoinTokenView
	Join string `json:"join"`
	// URL is the controller address the join string carries.
	URL string `json:"url"`
}
