package store

import (
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// SetDrained records whether the agent is drained (at is when it was
// drained); an agent that never announced itself is ErrNotFound.
func (s *Store) SetDrained(id string, drained bool, at time.Time) (Agent, error) {
	var a Agent
	err := s.updateView(func(tx *bolt.Tx, ch *viewChange) error {
		b := tx.Bucket(bucketAgents)
		ok, err := getJSON(b, id, &a)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("agent %q: %w", id, ErrNotFound)
		}
		if a.Drained == drained {
			return nil
		}
		a.Drained, a.DrainedAt = drained, time.Time{}
		if drained {
			a.DrainedAt = at
		}
		ch.agents = append(ch.agents, a)
		return putJSON(b, id, &a)
	})
	if err != nil {
		return Agent{}, fmt.Errorf("store: drain agent %s: %w", id, err)
	}
	return a, nil
}
