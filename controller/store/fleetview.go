package store

import (
	"context"
	"fmt"
	"slices"
	"sync"

	bolt "go.etcd.io/bbolt"
)

// fleetView is the store's copy, in memory, of what the fleet's lists and
// the metrics read at every request: each agent's record, and the jobs'
// tallies (jobtally.go). Decoding every agent and job from the file per
// request was what made the lists take seconds while a fleet's results
// were being written. The file stays the truth: the view is read from it
// once at Open, and changed by the writes that change those records, once
// they commit, so it never shows what a rolled-back write did.
type fleetView struct {
	// writeMu orders the writes that change the view: bbolt lets the next
	// writer in before it runs commit handlers, so two writes' changes
	// could otherwise reach the view in the wrong order.
	writeMu sync.Mutex
	mu      sync.RWMutex
	agents  map[string]Agent
	// ids are the agents' ids, sorted: the order Agents lists them in.
	ids []string
	// idents are the agents' identities, for how each was enrolled
	// (withEnrolment).
	idents map[string]Identity
	jobs   jobTally
	// testHookApply, when set, runs between a write's commit and its
	// change of the view.
	testHookApply func()
}

// viewChange collects what one write changes in the view.
type viewChange struct {
	agents []Agent
	// forgotten are the ids of agents removed from the fleet.
	forgotten []string
	jobs      []jobChange
}

// updateView runs fn in a write transaction and applies the changes fn
// collected to the view once it commits.
func (s *Store) updateView(fn func(tx *bolt.Tx, ch *viewChange) error) error {
	s.view.writeMu.Lock()
	defer s.view.writeMu.Unlock()
	var ch viewChange
	err := s.db.Update(func(tx *bolt.Tx) error {
		ch = viewChange{}
		return fn(tx, &ch)
	})
	if err != nil {
		return err
	}
	if s.view.testHookApply != nil {
		s.view.testHookApply()
	}
	v := &s.view
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, a := range ch.agents {
		v.putAgent(a)
	}
	for _, id := range ch.forgotten {
		v.forgetAgent(id)
	}
	for _, j := range ch.jobs {
		v.jobs.apply(j)
	}
	return nil
}

// putAgent replaces the agent's record in the view; mu is held.
func (v *fleetView) putAgent(a Agent) {
	id := a.Hello.AgentID
	if _, ok := v.agents[id]; !ok {
		i, _ := slices.BinarySearch(v.ids, id)
		v.ids = slices.Insert(v.ids, i, id)
	}
	v.agents[id] = a
}

// forgetAgent drops the agent's record from the view; mu is held.
func (v *fleetView) forgetAgent(id string) {
	if i, ok := slices.BinarySearch(v.ids, id); ok {
		v.ids = slices.Delete(v.ids, i, i+1)
	}
	delete(v.agents, id)
}

// loadView reads the agents and the jobs' tallies from the file.
func (s *Store) loadView() error {
	v := &s.view
	v.agents = map[string]Agent{}
	v.idents = map[string]Identity{}
	v.jobs = newJobTally()
	ctx := context.Background()
	err := s.db.View(func(tx *bolt.Tx) error {
		err := forEachJSON(ctx, tx.Bucket(bucketAgents), func(_ string, a *Agent) error {
			v.putAgent(*a)
			return nil
		})
		if err != nil {
			return err
		}
		err = forEachJSON(ctx, tx.Bucket(bucketIdentities), func(id string, i *Identity) error {
			v.idents[id] = *i
			return nil
		})
		if err != nil {
			return err
		}
		return forEachJSON(ctx, tx.Bucket(bucketJobs), func(_ string, j *JobRecord) error {
			v.jobs.apply(jobChange{rec: *j})
			return nil
		})
	})
	if err != nil {
		return fmt.Errorf("store: read the agents and jobs: %w", err)
	}
	return nil
}

// Agent returns one agent or ErrNotFound. The record is shared with the
// store's view: its slices and maps are not to be changed.
func (s *Store) Agent(id string) (Agent, error) {
	s.view.mu.RLock()
	defer s.view.mu.RUnlock()
	a, ok := s.view.agents[id]
	if !ok {
		return Agent{}, fmt.Errorf("store: agent %s: %w", id, ErrNotFound)
	}
	return s.view.enrolled(a), nil
}

// enrolled is a with its enrolment (withEnrolment); mu is held.
func (v *fleetView) enrolled(a Agent) Agent {
	if ident, ok := v.idents[a.Hello.AgentID]; ok {
		return withEnrolment(a, ident)
	}
	return a
}

// putIdentity keeps an identity written to the file in the view.
func (s *Store) putIdentity(ident Identity) {
	s.view.mu.Lock()
	defer s.view.mu.Unlock()
	s.view.idents[ident.AgentID] = ident
}

// Agents lists every agent by id, from memory. The records are shared
// with the store's view: their slices and maps are not to be changed.
func (s *Store) Agents(ctx context.Context) ([]Agent, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("store: agents: %w", err)
	}
	s.view.mu.RLock()
	defer s.view.mu.RUnlock()
	out := make([]Agent, len(s.view.ids))
	for i, id := range s.view.ids {
		out[i] = s.view.enrolled(s.view.agents[id])
	}
	return out, nil
}
