package store

import (
	"maps"
	"slices"
	"strings"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// jobTally is the jobs as the metrics and the sweeps list need them: how
// many are in each state, in all and by sweep, and the record of each job
// that has not ended (a job in its agent's hands may be stalled, which
// depends on the agent and the time, so it is judged when read). A lab's
// ended jobs pile up; only their counts are kept.
type jobTally struct {
	states map[protocol.JobState]int
	sweeps map[string]map[protocol.JobState]int
	open   map[string]JobRecord
}

// jobChange is one job's write: the record written, and the state and
// sweep it had before (had false for a new job).
type jobChange struct {
	had       bool
	prevState protocol.JobState
	prevSweep string
	rec       JobRecord
}

// jobWrite is the change from prev (found says whether there was one) to
// rec.
func jobWrite(prev JobRecord, found bool, rec JobRecord) jobChange {
	return jobChange{had: found, prevState: prev.State, prevSweep: prev.Job.SweepID, rec: rec}
}

func newJobTally() jobTally {
	return jobTally{states: map[protocol.JobState]int{}, sweeps: map[string]map[protocol.JobState]int{}, open: map[string]JobRecord{}}
}

func (t *jobTally) apply(ch jobChange) {
	if ch.had {
		t.count(ch.prevSweep, ch.prevState, -1)
	}
	t.count(ch.rec.Job.SweepID, ch.rec.State, 1)
	if ch.rec.State.Terminal() {
		delete(t.open, ch.rec.Job.ID)
	} else {
		t.open[ch.rec.Job.ID] = ch.rec
	}
}

// count adds n to the state's counts; a count that reaches 0 is removed,
// so a state shows only while some job is in it.
func (t *jobTally) count(sweep string, s protocol.JobState, n int) {
	add := func(m map[protocol.JobState]int) {
		if m[s] += n; m[s] == 0 {
			delete(m, s)
		}
	}
	add(t.states)
	if sweep == "" {
		return
	}
	m := t.sweeps[sweep]
	if m == nil {
		m = map[protocol.JobState]int{}
		t.sweeps[sweep] = m
	}
	add(m)
	if len(m) == 0 {
		delete(t.sweeps, sweep)
	}
}

// JobStates counts every job by state; a state no job is in is absent.
func (s *Store) JobStates() map[protocol.JobState]int {
	s.view.mu.RLock()
	defer s.view.mu.RUnlock()
	return maps.Clone(s.view.jobs.states)
}

// SweepJobStates counts the jobs of each sweep named (by the sweep the
// job names) by state: a sweep without jobs is absent.
func (s *Store) SweepJobStates(ids []string) map[string]map[protocol.JobState]int {
	s.view.mu.RLock()
	defer s.view.mu.RUnlock()
	out := make(map[string]map[protocol.JobState]int, len(ids))
	for _, id := range ids {
		if m, ok := s.view.jobs.sweeps[id]; ok {
			out[id] = maps.Clone(m)
		}
	}
	return out
}

// UnfinishedSweepJobStates is SweepJobStates for every sweep with a job
// that has not ended.
func (s *Store) UnfinishedSweepJobStates() map[string]map[protocol.JobState]int {
	s.view.mu.RLock()
	defer s.view.mu.RUnlock()
	out := map[string]map[protocol.JobState]int{}
	for _, j := range s.view.jobs.open {
		id := j.Job.SweepID
		if _, done := out[id]; id != "" && !done {
			out[id] = maps.Clone(s.view.jobs.sweeps[id])
		}
	}
	return out
}

// OpenJobs lists the jobs that have not ended, of the sweep when sweepID
// is not empty, in no order. The records are shared with the store's
// view: their slices are not to be changed.
func (s *Store) OpenJobs(sweepID string) []JobRecord {
	s.view.mu.RLock()
	defer s.view.mu.RUnlock()
	var out []JobRecord
	for _, j := range s.view.jobs.open {
		if sweepID == "" || j.Job.SweepID == sweepID {
			out = append(out, j)
		}
	}
	return out
}

// ActiveJobs lists the jobs that have not ended from memory, in the order
// Jobs lists them with Active set: oldest first, by id within a sweep.
func (s *Store) ActiveJobs() []JobRecord {
	out := s.OpenJobs("")
	slices.SortFunc(out, func(a, b JobRecord) int { return strings.Compare(a.Job.ID, b.Job.ID) })
	sortJobs(out)
	return out
}
