package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/controller/ingest"
	"github.com/vlmfleet/vlmfleet/protocol"
)

const (
	// telemetryRing is how many recent samples per agent the live page gets.
	telemetryRing = 120
	// persistSeenEvery bounds how often heartbeats write an agent's
	// last-seen to the store; the writes due are made together, once a
	// second (watchAgents).
	persistSeenEvery = 30 * time.Second
)

// liveAgent is what heartbeats tell about an agent.
type liveAgent struct {
	lastSeen time.Time
	state    string
	jobID    string
	// stateSince is when the heartbeats' state or job id last changed.
	stateSince time.Time
	persisted  time.Time
	online     bool
	// drained is what the heartbeats say of the agent's drain.
	drained bool
	// powerMode and powerLimitW are what the heartbeats say the device
	// runs in now; both empty until one says (an agent that does not
	// report it), when the hello's stand.
	powerMode   string
	powerLimitW float64
}

// liveState is the in-memory view fed by core NATS: lost on restart, and
// that is fine, because it is rebuilt within one heartbeat period.
type liveState struct {
	mu     sync.Mutex
	agents map[string]*liveAgent
	// jobs are the jobs with live progress, by id, and byAgent their ids
	// by agent (at most maxLiveJobsPerAgent each); ended are the jobs
	// ended lately, whose progress is refused.
	jobs        map[string]*liveJob
	byAgent     map[string][]string
	ended       *recentIDs
	progressSeq uint64
	telemetry   map[string][]protocol.TelemetryTick // agent id → recent samples, oldest first
	// touched are the last-seen times due to be persisted, by agent id.
	touched map[string]time.Time
	// drains are the agents' stored drains (see reconcileDrain), by id.
	drains map[string]bool
}

func newLiveState() *liveState {
	return &liveState{
		agents:    map[string]*liveAgent{},
		jobs:      map[string]*liveJob{},
		byAgent:   map[string][]string{},
		ended:     newRecentIDs(recentlyEndedKept),
		telemetry: map[string][]protocol.TelemetryTick{},
		touched:   map[string]time.Time{},
		drains:    map[string]bool{},
	}
}

// touch marks agent id's last-seen t as due to be persisted.
func (l *liveState) touch(id string, t time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.touched[id] = t
}

// takeTouched returns the last-seen times due and forgets them.
func (l *liveState) takeTouched() map[string]time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.touched) == 0 {
		return nil
	}
	out := l.touched
	l.touched = map[string]time.Time{}
	return out
}

// seen records that an agent was heard from at t; state and jobID come
// from heartbeats (empty leaves them). It reports whether last-seen is due
// to be persisted.
func (l *liveState) seen(id string, t time.Time, state, jobID string) (persist bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	a := l.agents[id]
	if a == nil {
		a = &liveAgent{}
		l.agents[id] = a
	}
	if t.After(a.lastSeen) {
		a.lastSeen = t
	}
	if state != "" && (state != a.state || jobID != a.jobID || a.stateSince.IsZero()) {
		a.state, a.jobID, a.stateSince = state, jobID, t
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

// setPower records the power a heartbeat reports (a job may switch it);
// a heartbeat that reports none leaves what was known.
func (l *liveState) setPower(id, mode string, limitW float64) {
	if mode == "" && limitW == 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if a := l.agents[id]; a != nil {
		a.powerMode, a.powerLimitW = mode, limitW
	}
}

func (l *liveState) agent(id string) (liveAgent, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	a, ok := l.agents[id]
	if !ok {
		return liveAgent{}, false
	}
	return *a, true
}

// transitions flips agents' online flags against the timeout and returns
// the ids whose flag changed.
func (l *liveState) transitions(now time.Time, timeout time.Duration) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var changed []string
	for id, a := range l.agents {
		on := now.Sub(a.lastSeen) < timeout
		if on != a.online {
			a.online = on
			changed = append(changed, id)
		}
	}
	sort.Strings(changed)
	return changed
}

// job is the live view of job id, nil when it has no progress kept.
func (l *liveState) job(id string) *liveJob {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.jobs[id]
}

// putProgress keeps p as the latest of its combination in job j (from
// job, or made from the store just before), unless the job ended
// meanwhile. A job new to the agent's share drops the agent's job that
// was reported on least recently, past maxLiveJobsPerAgent.
func (l *liveState) putProgress(p protocol.Progress, j *liveJob) error {
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
		if ids := l.byAgent[j.agent]; len(ids) > maxLiveJobsPerAgent {
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
func (l *liveState) forget(id string) {
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

func (l *liveState) jobEnded(jobID string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.forget(jobID)
	l.ended.add(jobID)
}

func (l *liveState) putTelemetry(t protocol.TelemetryTick) {
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

// snapshot copies the progress and telemetry for the live page.
func (l *liveState) snapshot() ([]protocol.Progress, map[string][]protocol.TelemetryTick) {
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

// startLive subscribes to the live-only subjects on core NATS.
func (c *Controller) startLive() error {
	handlers := map[string]nats.MsgHandler{
		protocol.KindHeartbeat: c.heartbeatHandler(),
		protocol.KindProgress:  c.progressHandler(),
		protocol.KindTelemetry: c.telemetryHandler(),
	}
	for _, kind := range []string{protocol.KindHeartbeat, protocol.KindProgress, protocol.KindTelemetry} {
		sub, err := c.nc.Subscribe(protocol.AgentSubjectAll(kind), handlers[kind])
		if err != nil {
			return fmt.Errorf("controller: subscribe %s: %w", protocol.AgentSubjectAll(kind), err)
		}
		// Live views prefer dropping to stalling the connection.
		_ = sub.SetPendingLimits(65536, 64<<20)
		c.subs = append(c.subs, sub)
	}
	if err := c.nc.Flush(); err != nil {
		return fmt.Errorf("controller: flush subscriptions: %w", err)
	}
	return nil
}

// progressHandler takes in progress messages (takeProgress).
func (c *Controller) progressHandler() nats.MsgHandler {
	return onLive(c, RefusalProgress, maxProgressBytes,
		func(p *protocol.Progress) (string, int) { return p.AgentID, p.Schema }, c.takeProgress)
}

// telemetryHandler takes in telemetry samples (takeTelemetry).
func (c *Controller) telemetryHandler() nats.MsgHandler {
	return onLive(c, RefusalTelemetry, maxTelemetryBytes,
		func(t *protocol.TelemetryTick) (string, int) { return t.AgentID, t.Schema }, c.takeTelemetry)
}

// onLive makes the handler of one kind of live message (see takeLive).
func onLive[T any](c *Controller, refusal string, limit int, head func(*T) (agentID string, schema int), use func(T) error) nats.MsgHandler {
	take := takeLive(c, refusal, limit, head, use)
	return func(m *nats.Msg) { take(m) }
}

// takeLive makes the taker of one kind of live message: it decodes a T of
// at most limit bytes (see decodeLive; head gives its agent id and schema)
// and passes it to use; what either refuses is counted and logged as a
// refusal of that kind. It says whether the message was taken, so that a
// refused request goes unanswered.
func takeLive[T any](c *Controller, refusal string, limit int, head func(*T) (agentID string, schema int), use func(T) error) func(*nats.Msg) bool {
	return func(m *nats.Msg) bool {
		var v T
		agent, err := decodeLive(m.Subject, m.Data, limit, &v, head)
		if err == nil {
			err = use(v)
		}
		if err != nil {
			c.refuse(agent, refusal, ingest.Truncate(err.Error(), 200))
			return false
		}
		return true
	}
}

// decodeLive parses a live message of at most limit bytes and checks that
// the agent id in it is the subject's, which it returns (or the subject
// when it names no valid agent). A bad live message is dropped, and
// counted and logged as a refusal (onLive): losing one is harmless by
// design, so it is not kept for an operator as a durable one is.
func decodeLive[T any](subject string, data []byte, limit int, v *T, head func(*T) (agentID string, schema int)) (string, error) {
	subjAgent, _, err := protocol.ParseAgentSubject(subject)
	if err != nil {
		return ingest.Truncate(subject, 100), err
	}
	if len(data) > limit {
		return subjAgent, fmt.Errorf("%d bytes, more than %d", len(data), limit)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return subjAgent, fmt.Errorf("decoding: %w", err)
	}
	id, schema := head(v)
	if schema < 1 || schema > protocol.SchemaVersion {
		return subjAgent, fmt.Errorf("schema %d, this build reads 1..%d", schema, protocol.SchemaVersion)
	}
	if id != subjAgent {
		return subjAgent, fmt.Errorf("subject names agent %q but the message says %.80q", subjAgent, id)
	}
	// A kind protocol validates (a heartbeat: its state) is checked too.
	if v, ok := any(v).(interface{ Validate() error }); ok {
		return subjAgent, v.Validate()
	}
	return subjAgent, nil
}

func (c *Controller) onHeartbeat(hb protocol.Heartbeat) {
	now := time.Now().UTC()
	c.metrics.heartbeats.Inc()
	if !hb.Time.IsZero() {
		c.metrics.heartbeatDelay.Observe(max(0, now.Sub(hb.Time).Seconds()))
	}
	state := hb.State
	if state == "" {
		state = protocol.AgentIdle
	}
	if persist := c.live.seen(hb.AgentID, now, state, hb.JobID); persist {
		c.live.touch(hb.AgentID, now)
	}
	c.live.setPower(hb.AgentID, hb.PowerMode, hb.PowerLimitW)
	c.reconcileDrain(hb)
	c.emit(api.EventHeartbeat, hb.AgentID, hb)
}

// watchAgents announces agents going online or offline as "agent" events,
// and persists the last-seen times due, in one transaction a second.
func (c *Controller) watchAgents(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			if seen := c.live.takeTouched(); seen != nil {
				if err := c.store.TouchAgents(seen); err != nil {
					c.log.Warn().Err(err).Msg("persisting last-seen failed")
				}
			}
			for _, id := range c.live.transitions(now, c.opt.HeartbeatTimeout) {
				if v, err := c.agentView(id); err == nil {
					c.emit(api.EventAgent, id, v)
				}
			}
		}
	}
}
