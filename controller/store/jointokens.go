package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// JoinToken lets devices enrol themselves (POST /api/join) until it
// expires, is used up or is revoked. Its secret is kept only as a hash.
type JoinToken struct {
	ID string `json:"id"`
	// SecretSHA256 is the hex SHA-256 of the secret. The secret is 32
	// random bytes, so a plain hash is enough: nothing can be guessed.
	SecretSHA256 string    `json:"secret_sha256"`
	CreatedAt    time.Time `json:"created_at"`
	ExpiresAt    time.Time `json:"expires_at"`
	// Uses is how many enrolments the token allows; Used how many it made.
	Uses int `json:"uses"`
	Used int `json:"used"`
	// Labels are applied to each agent enrolled with the token.
	Labels map[string]string `json:"labels,omitempty"`
	// Reenrol lets the token replace the key of an agent id that is
	// already enrolled; without it such a join is refused.
	Reenrol   bool        `json:"reenrol,omitempty"`
	RevokedAt time.Time   `json:"revoked_at,omitzero"`
	Enrolled  []Enrolment `json:"enrolments,omitempty"`
}

// Enrolment is one device enrolled with a join token.
type Enrolment struct {
	AgentID    string    `json:"agent_id"`
	PublicKey  string    `json:"public_key"`
	At         time.Time `json:"at"`
	TokenID    string    `json:"token_id"`
	RemoteAddr string    `json:"remote_addr"`
}

// ErrExists is returned when a record to create is already there.
var ErrExists = errors.New("exists")

// PutJoinToken stores a new token; an id in use is ErrExists.
func (s *Store) PutJoinToken(t JoinToken) error {
	if err := protocol.ValidateJoinTokenID(t.ID); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	err := s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketJoinTokens)
		if b.Get([]byte(t.ID)) != nil {
			return ErrExists
		}
		return putJSON(b, t.ID, &t)
	})
	if err != nil {
		return fmt.Errorf("store: join token %s: %w", t.ID, err)
	}
	return nil
}

// JoinToken returns one token or ErrNotFound.
func (s *Store) JoinToken(id string) (JoinToken, error) {
	return getOne[JoinToken](s, bucketJoinTokens, "join token", id)
}

// JoinTokens lists every token, revoked and expired ones included, by id.
func (s *Store) JoinTokens(ctx context.Context) ([]JoinToken, error) {
	return getAll[JoinToken](ctx, s, bucketJoinTokens, "join tokens", nil)
}

// RevokeJoinToken marks token id revoked at at (once: revoking again
// keeps the first time) and returns it; an unknown id is ErrNotFound.
func (s *Store) RevokeJoinToken(id string, at time.Time) (JoinToken, error) {
	var t JoinToken
	err := s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketJoinTokens)
		if err := getExisting(b, id, &t); err != nil {
			return err
		}
		if !t.RevokedAt.IsZero() {
			return nil
		}
		t.RevokedAt = at
		return putJSON(b, id, &t)
	})
	if err != nil {
		return JoinToken{}, fmt.Errorf("store: revoke join token %s: %w", id, err)
	}
	return t, nil
}

// JoinDecision says whether a join may enrol: given the token, the
// identity the agent id has (zero when none) and the identity of another
// agent id that already holds the join's public key, revoked or not, or of
// any agent id that held it when it was revoked (zero when none), it
// returns nil to enrol.
type JoinDecision func(t JoinToken, prev, keyHolder Identity) error

// Join enrols e.AgentID with e.PublicKey by token e.TokenID in one
// transaction, if decide allows it: the token's use is counted and the
// enrolment recorded with the identity, so that two devices joining at
// once cannot use a token more often than it allows. It returns the
// identity the agent had before (zero when none). An unknown token is
// ErrNotFound; decide's error is returned as it is, nothing changed.
func (s *Store) Join(e Enrolment, decide JoinDecision) (prev Identity, err error) {
	if err := protocol.ValidateAgentID(e.AgentID); err != nil {
		return Identity{}, fmt.Errorf("store: join: %w", err)
	}
	var ident Identity
	err = s.db.Update(func(tx *bolt.Tx) error {
		tokens, idents := tx.Bucket(bucketJoinTokens), tx.Bucket(bucketIdentities)
		var t JoinToken
		if err := getExisting(tokens, e.TokenID, &t); err != nil {
			return err
		}
		if _, err := getJSON(idents, e.AgentID, &prev); err != nil {
			return err
		}
		holder, err := keyHolder(idents, e.PublicKey, e.AgentID)
		if err == nil && holder.AgentID == "" {
			holder, err = revokedKeyHolder(tx, e.PublicKey, prev)
		}
		if err != nil {
			return err
		}
		if err := decide(t, prev, holder); err != nil {
			return err
		}
		if err := retireKey(tx, prev); err != nil {
			return err
		}
		t.Used++
		t.Enrolled = append(t.Enrolled, e)
		if err := putJSON(tokens, t.ID, &t); err != nil {
			return err
		}
		ident = Identity{AgentID: e.AgentID, PublicKey: e.PublicKey, CreatedAt: e.At, Token: t.ID, Labels: t.Labels}
		return putJSON(idents, e.AgentID, &ident)
	})
	if err != nil {
		return Identity{}, err
	}
	s.putIdentity(ident)
	return prev, nil
}
