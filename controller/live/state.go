package live

import (
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/vlmfleet/vlmfleet/protocol"
)

const (
	// telemetryRing is how many recent samples per agent the live page gets.
	telemetryRing = 120
	// persistSeenEvery bounds how often heartbeats write an agent's
	// last-seen to the store; the writes due are made together, once a
	// second (the controller's watch of its agents).
	persistSeenEvery = 30 * time.Second
)

// Presence is what heartbeats tell about an agent.
type Presence struct {
	LastSeen time.Time
	State    string
	JobID    string
	// StateSince is when the heartbeats' state or job id last changed.
	StateSince time.Time
	persisted  time.Time
	online     bool
	// Drained is what the heartbeats say of the agent's drain.
	Drained bool
	// PowerMode and PowerLimitW are what the heartbeats say the device
	// runs in now; both empty until one says (an agent that does not
	// report it), when the hello's stand.
	PowerMode   string
	PowerLimitW float64
}

// State is the in-memory view fed by core NATS: lost on restart, and
// that is fine, because it is rebuilt within one heartbeat period.
type State struct {
	mu     sync.Mutex
	agents map[string]*Presence
	// jobs are the jobs with live progress, by id, and byAgent their ids
	// by agent (at most MaxLiveJobsPerAgent each); ended are the jobs
	// ended lately, whose progress is refused.
	jobs        map[string]*liveJob
	byAgent     map[string][]string
	ended       *recentIDs
	progressSeq uint64
	telemetry   map[string][]protocol.TelemetryTick // agent id → recent samples, oldest first
	// touched are the last-seen times due to be persisted, by agent id.
	touched map[string]time.Time
	// drains are the agents' stored drains (see StoredDrain), by id.
	drains map[string]bool
}

// NewState is an empty live view.
func NewState() *State {
	return &State{
		agents:    map[string]*Presence{},
		jobs:      map[string]*liveJob{},
		byAgent:   map[string][]string{},
		ended:     newRecentIDs(recentlyEndedKept),
		telemetry: map[string][]protocol.TelemetryTick{},
		touched:   map[string]time.Time{},
		drains:    map[string]bool{},
	}
}

// Touch marks agent id's last-seen t as due to be persisted.
func (l *State) Touch(id string, t time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.touched[id] = t
}

// TakeTouched returns the last-seen times due and forgets them.
func (l *State) TakeTouched() map[string]time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.touched) == 0 {
		return nil
	}
	out := l.touched
	l.touched = map[string]time.Time{}
	return out
}

// Seen records that an agent was heard from at t; state and jobID come
// from heartbeats (empty leaves them). It reports whether last-seen is due
// to be persisted.
func (l *State) Seen(id string, t time.Time, state, jobID string) (persist bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	a := l.agents[id]
	if a == nil {
		a = &Presence{}
		l.agents[id] = a
	}
	if t.After(a.LastSeen) {
		a.LastSeen = t
	}
	if state != "" && (state != a.State || jobID != a.JobID || a.StateSince.IsZero()) {
		a.State, a.JobID, a.StateSince = state, jobID, t
		// Agents sample telemetry only while they run a job: the last job's
		// samples must not read as the figures of an idle device.
		if state != protocol.AgentBusy {
			delete(l.telemetry, id)
		}
	}
	if t.Sub(a.persisted) >= persistSeenEvery {
		a.persisted = t
		persist = true
	}
	return persist
}

// SetPower records the power a heartbeat reports (a job may switch it);
// a heartbeat that reports none leaves what was known.
func (l *State) SetPower(id, mode string, limitW float64) {
	if mode == "" && limitW == 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if a := l.agents[id]; a != nil {
		a.PowerMode, a.PowerLimitW = mode, limitW
	}
}

// Presence is what heartbeats told of agent id, if anything.
func (l *State) Presence(id string) (Presence, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	a, ok := l.agents[id]
	if !ok {
		return Presence{}, false
	}
	return *a, true
}

// Transitions flips agents' online flags against the timeout and returns
// the ids whose flag changed.
func (l *State) Transitions(now time.Time, timeout time.Duration) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var changed []string
	for id, a := range l.agents {
		on := now.Sub(a.LastSeen) < timeout
		if on != a.online {
			a.online = on
			changed = append(changed, id)
		}
	}
	sort.Strings(changed)
	return changed
}

// job is the live view of job id, nil when it has no progress kept.
func (l *State) job(id string) *liveJob {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.jobs[id]
}

// putProgress keeps p as the latest of its combination in job j (from
// job, or made from the store just before), unless the job ended
// meanwhile. A job new to the agent's share drops the agent's job that
// was reported on least recently, past MaxLiveJobsPerAgent.
func (l *State) putProgress(p protocol.Progress, j *liveJob) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ended.has(p.JobID) {
		return fmt.Errorf("job %s has ended", p.JobID)
	}
	l.progressSeq++
	if have := l.jobs[p.JobID]; have != nil {
		j = have
		j.seq = l.progressSeq
	} else {
		j.seq = l.progressSeq
		l.jobs[p.JobID] = j
		l.byAgent[j.agent] = append(l.byAgent[j.agent], p.JobID)
		if ids := l.byAgent[j.agent]; len(ids) > MaxLiveJobsPerAgent {
			oldest := ids[0]
			for _, id := range ids[1:] {
				if l.jobs[id].seq < l.jobs[oldest].seq {
					oldest = id
				}
			}
			l.forget(oldest)
		}
	}
	if !j.plan[p.Combo] {
		// Only the level being searched is shown: the ones before it are
		// results by now, and a search's levels, unlike the plan's, are
		// not known in advance to bound what an agent could fill this with.
		for k, q := range j.latest {
			if !j.plan[q.Combo] {
				delete(j.latest, k)
			}
		}
	}
	j.latest[p.Combo.String()] = p
	return nil
}

// forget drops the live progress of job id.
func (l *State) forget(id string) {
	j := l.jobs[id]
	if j == nil {
		return
	}
	delete(l.jobs, id)
	ids := slices.DeleteFunc(l.byAgent[j.agent], func(s string) bool { return s == id })
	if len(ids) == 0 {
		delete(l.byAgent, j.agent)
	} else {
		l.byAgent[j.agent] = ids
	}
}

// JobEnded drops the live progress of job jobID and refuses any more.
func (l *State) JobEnded(jobID string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.forget(jobID)
	l.ended.add(jobID)
}

func (l *State) putTelemetry(t protocol.TelemetryTick) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := l.telemetry[t.AgentID]
	if len(r) < telemetryRing {
		l.telemetry[t.AgentID] = append(r, t)
		return
	}
	// Full: shift in place rather than allocate a new ring per sample
	// (snapshot copies what it hands out, so nothing else holds r).
	copy(r, r[1:])
	r[len(r)-1] = t
}

// Snapshot copies the progress and telemetry for the live page.
func (l *State) Snapshot() ([]protocol.Progress, map[string][]protocol.TelemetryTick) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var prog []protocol.Progress
	for _, j := range l.jobs {
		for _, p := range j.latest {
			prog = append(prog, p)
		}
	}
	sort.Slice(prog, func(i, j int) bool {
		if prog[i].JobID != prog[j].JobID {
			return prog[i].JobID < prog[j].JobID
		}
		return prog[i].ComboIdx < prog[j].ComboIdx
	})
	tel := make(map[string][]protocol.TelemetryTick, len(l.telemetry))
	for id, r := range l.telemetry {
		tel[id] = append([]protocol.TelemetryTick(nil), r...)
	}
	return prog, tel
}

// ForgetAgent drops what heartbeats told of agent id.
func (l *State) ForgetAgent(id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.agents, id)
	delete(l.telemetry, id)
	delete(l.touched, id)
	delete(l.drains, id)
}
