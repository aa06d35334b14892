package store

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// Identity is an agent's NATS identity on the controller's embedded server:
// the public half of the nkey the agent signs in with. The seed is never
// stored; whoever enrolled the agent holds it.
type Identity struct {
	AgentID   string    `json:"agent_id"`
	PublicKey string    `json:"public_key"`
	CreatedAt time.Time `json:"created_at"`
	// RevokedAt is set once the identity is revoked; the agent can no
	// longer connect until it is enrolled again.
	RevokedAt time.Time `json:"revoked_at,omitzero"`
	// Token is the join token the agent enrolled with (its id); empty
	// for credentials made on the controller (agent-creds create).
	Token string `json:"token,omitempty"`
	// Labels are the token's, applied to the agent over those it
	// announces (Agent, Agents).
	Labels map[string]string `json:"labels,omitempty"`
}

// Active says whether the identity lets its agent connect.
func (i Identity) Active() bool { return i.RevokedAt.IsZero() }

// PutIdentity records publicKey as agent id's identity, created at at,
// replacing whatever the agent had: enrolling again rotates its key.
func (s *Store) PutIdentity(id, publicKey string, at time.Time) (Identity, error) {
	if err := protocol.ValidateAgentID(id); err != nil {
		return Identity{}, fmt.Errorf("store: identity: %w", err)
	}
	ident := Identity{AgentID: id, PublicKey: publicKey, CreatedAt: at}
	// Devices enrolled together share a commit (one fsync) this way; the
	// write may run twice, which a put of the same record allows.
	err := s.db.Batch(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketIdentities)
		var prev Identity
		if _, err := getJSON(b, id, &prev); err != nil {
			return err
		}
		if err := retireKey(tx, prev); err != nil {
			return err
		}
		return putJSON(b, id, &ident)
	})
	if err != nil {
		return Identity{}, fmt.Errorf("store: identity %s: %w", id, err)
	}
	s.putIdentity(ident)
	return ident, nil
}

// RevokeIdentity marks agent id's identity revoked at at and returns it.
// An agent never enrolled, or already revoked, is ErrNotFound: there is
// nothing to revoke.
func (s *Store) RevokeIdentity(id string, at time.Time) (Identity, error) {
	var ident Identity
	err := s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketIdentities)
		if err := getExisting(b, id, &ident); err != nil {
			return err
		}
		if !ident.Active() {
			return ErrNotFound
		}
		ident.RevokedAt = at
		if err := retireKey(tx, ident); err != nil {
			return err
		}
		return putJSON(b, id, &ident)
	})
	if err != nil {
		return Identity{}, fmt.Errorf("store: revoke identity %s: %w", id, err)
	}
	s.putIdentity(ident)
	return ident, nil
}

// Identity returns agent id's identity, revoked or not, or ErrNotFound.
func (s *Store) Identity(id string) (Identity, error) {
	return getOne[Identity](s, bucketIdentities, "identity", id)
}

// Identities lists every agent identity, revoked ones included, by agent id.
func (s *Store) Identities(ctx context.Context) ([]Identity, error) {
	return getAll[Identity](ctx, s, bucketIdentities, "identities", nil)
}

// keyHolder finds the identity of an agent other than except whose public
// key is pub, revoked or not (zero when none). A key in use is refused
// in the transaction that would enrol it, so that two joins at once
// cannot both take it. Only records that hold the key's text are
// decoded, so a lab of thousands of agents pays a byte search each.
func keyHolder(idents *bolt.Bucket, pub, except string) (Identity, error) {
	var found Identity
	needle := []byte(pub)
	err := idents.ForEach(func(k, v []byte) error {
		if string(k) == except || !bytes.Contains(v, needle) {
			return nil
		}
		var ident Identity
		if err := json.Unmarshal(v, &ident); err != nil {
			return fmt.Errorf("decode identity %s: %w", k, err)
		}
		if ident.PublicKey == pub && (found.AgentID == "" || ident.Active()) {
			found = ident
		}
		return nil
	})
	return found, err
}

// revokedKey is where a revoked public key was revoked: its agent and
// when. An identity's record is replaced when its id enrols again, so a
// revoked key is kept apart from it, for good: no join takes it again.
type revokedKey struct {
	AgentID   string    `json:"agent_id"`
	RevokedAt time.Time `json:"revoked_at"`
}

// retireKey keeps a revoked identity's public key among the revoked keys,
// as it is revoked and again before its record is replaced (a store
// written before the revoked keys were kept has only the record). An
// active identity, or none, is left alone.
func retireKey(tx *bolt.Tx, ident Identity) error {
	if ident.AgentID == "" || ident.Active() {
		return nil
	}
	b := tx.Bucket(bucketRevokedKeys)
	if b.Get([]byte(ident.PublicKey)) != nil {
		return nil
	}
	return putJSON(b, ident.PublicKey, revokedKey{AgentID: ident.AgentID, RevokedAt: ident.RevokedAt})
}

// revokedKeyHolder is the identity that held pub when it was revoked, as
// the revoked keys remember it (zero when pub was never revoked); its
// record may have been replaced since, under a new key. prev is the
// joining agent's own identity: its own revoked record with pub is left
// to the decision about the id, which says that the id was revoked.
func revokedKeyHolder(tx *bolt.Tx, pub string, prev Identity) (Identity, error) {
	if prev.PublicKey == pub && !prev.Active() {
		return Identity{}, nil
	}
	var rk revokedKey
	if ok, err := getJSON(tx.Bucket(bucketRevokedKeys), pub, &rk); err != nil || !ok {
		return Identity{}, err
	}
	return Identity{AgentID: rk.AgentID, PublicKey: pub, RevokedAt: rk.RevokedAt}, nil
}
