package store

import (
	"fmt"
	"time"

	"github.com/vlmfleet/vlmfleet/protocol"
	bolt "go.etcd.io/bbolt"
)

// Agent is what the controller keeps about one agent: its latest
// announcement and when it was last heard from.
type Agent struct {
	Hello     protocol.AgentHello `json:"hello"`
	FirstSeen time.Time           `json:"first_seen"`
	HelloAt   time.Time           `json:"hello_at"`
	LastSeen  time.Time           `json:"last_seen"`

	// Drained is set by an operator (POST /api/agents/{id}/drain): the
	// agent gets no new jobs and is told to fetch none; a new hello keeps it.
	Drained   bool      `json:"drained,omitempty"`
	DrainedAt time.Time `json:"drained_at,omitzero"`

	// EnrolledAt, EnrolledByToken and RevokedAt are read from the agent's
	// identity (withEnrolment), never stored here.
	EnrolledAt      time.Time `json:"-"`
	EnrolledByToken string    `json:"-"`
	RevokedAt       time.Time `json:"-"`
}

// MaxHelloAhead is how far after its receipt a hello's started_at may
// lie. Clocks that NTP keeps differ by far less; a hello from further in
// the future is refused, since the hello with the latest started_at is the
// one kept, and one dated years ahead (forged, or from a clock gone wrong)
// would keep every real one after it from replacing it.
const MaxHelloAhead = 10 * time.Minute

// PutAgentHello upserts the agent from its announcement, received at at.
// The announcement with the latest StartedAt is kept; an older one only
// counts as the agent being heard from. One that started more than
// MaxHelloAhead after at is refused.
func (s *Store) PutAgentHello(h protocol.AgentHello, at time.Time) error {
	if err := protocol.ValidateAgentID(h.AgentID); err != nil {
		return &RejectError{Reason: "agent hello: " + err.Error()}
	}
	if ahead := h.StartedAt.Sub(at); ahead > MaxHelloAhead {
		return Rejectf("agent hello: started_at %s is %s after the hello arrived (%s), more than the %s a clock may be ahead; is the agent's clock right?",
			h.StartedAt.Format(time.RFC3339), ahead.Round(time.Second), at.Format(time.RFC3339), MaxHelloAhead)
	}
	err := s.updateView(func(tx *bolt.Tx, ch *viewChange) error {
		b := tx.Bucket(bucketAgents)
		var a Agent
		if _, err := getJSON(b, h.AgentID, &a); err != nil {
			return err
		}
		if a.FirstSeen.IsZero() {
			a.FirstSeen = at
		}
		// A hello from an earlier start of the agent (redelivered, or
		// delayed behind the restart's) must not replace the newer one. A
		// stored one dated past its own arrival, which this store no
		// longer takes, holds nothing back.
		future := a.Hello.StartedAt.Sub(a.HelloAt) > MaxHelloAhead
		if a.Hello.AgentID == "" || future || !h.StartedAt.Before(a.Hello.StartedAt) {
			a.Hello = h
			a.HelloAt = at
		}
		if at.After(a.LastSeen) {
			a.LastSeen = at
		}
		ch.agents = append(ch.agents, a)
		return putJSON(b, h.AgentID, &a)
	})
	if err != nil {
		return fmt.Errorf("store: agent %s: %w", h.AgentID, err)
	}
	return nil
}

// ForgetAgent removes agent id from the fleet: its record goes, what it
// measured (runs, jobs, sweeps) and its identity stay. An agent that
// announces itself again is known afresh. ErrNotFound when it is not
// known.
func (s *Store) ForgetAgent(id string) error {
	err := s.updateView(func(tx *bolt.Tx, ch *viewChange) error {
		b := tx.Bucket(bucketAgents)
		if b.Get([]byte(id)) == nil {
			return ErrNotFound
		}
		ch.forgotten = append(ch.forgotten, id)
		return b.Delete([]byte(id))
	})
	if err != nil {
		return fmt.Errorf("store: forget agent %s: %w", id, err)
	}
	return nil
}

// TouchAgents records when each agent was last heard from, all in one
// transaction: a fleet's heartbeats cost one write to disk per flush, not
// one per agent. An agent that never announced itself has no record and
// is left alone, and a time older than the stored one changes nothing.
func (s *Store) TouchAgents(seen map[string]time.Time) error {
	err := s.updateView(func(tx *bolt.Tx, ch *viewChange) error {
		b := tx.Bucket(bucketAgents)
		for id, at := range seen {
			var a Agent
			ok, err := getJSON(b, id, &a)
			if err != nil {
				return err
			}
			if !ok || !at.After(a.LastSeen) {
				continue
			}
			a.LastSeen = at
			if err := putJSON(b, id, &a); err != nil {
				return err
			}
			ch.agents = append(ch.agents, a)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: touch %d agents: %w", len(seen), err)
	}
	return nil
}
