package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/vlmfleet/vlmfleet/protocol"
)

const (
	// telemetryRing is how many recent samples per agent the live page gets.
	telemetryRing = 120
	// persistSeenEvery bounds how often heartbeats write an agent's
	// last-seen to the store; the writes due are made together, once a
	// second (watchAgents).
	persistSeenEvery = 30 * time.Second
	// maxLiveBytes bounds a live message; they are small.
	maxLiveBytes = 1 << 20
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
}

// liveState is the in-memory view fed by core NATS: lost on restart, and
// that is fine, because it is rebuilt within one heartbeat period.
type liveState struct {
	mu        sync.Mutex
	agents    map[string]*liveAgent
	progress  map[string]map[string]protocol.Progress // job id → combo key → latest
	telemetry map[string][]protocol.TelemetryTick     // agent id → recent samples, oldest first
	// touched are the last-seen times due to be persisted, by agent id.
	touched map[string]time.Time
	// drains are the agents' stored drains (see reconcileDrain), by id.
	drains map[string]bool
}

func newLiveState() *liveState {
	return &liveState{
		agents:    map[string]*liveAgent{},
		progress:  map[string]map[string]protocol.Progress{},
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

func (l *liveState) putProgress(p protocol.Progress) {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := l.progress[p.JobID]
	if m == nil {
		m = map[string]protocol.Progress{}
		l.progress[p.JobID] = m
	}
	m[p.Combo.String()] = p
}

func (l *liveState) jobEnded(jobID string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.progress, jobID)
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
	for _, m := range l.progress {
		for _, p := range m {
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
		protocol.KindHeartbeat: c.answerDrain(onLive(c, "a heartbeat", func(h *protocol.Heartbeat) (string, int) { return h.AgentID, h.Schema }, c.onHeartbeat)),
		protocol.KindProgress:  onLive(c, "a progress message", func(p *protocol.Progress) (string, int) { return p.AgentID, p.Schema }, c.onProgress),
		protocol.KindTelemetry: onLive(c, "a telemetry tick", func(t *protocol.TelemetryTick) (string, int) { return t.AgentID, t.Schema }, c.onTelemetry),
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

// onLive makes the handler of one kind of live message: it decodes a T
// (see decodeLive; head gives its agent id and schema) and passes it to
// use, or logs what it ignored.
func onLive[T any](c *Controller, what string, head func(*T) (agentID string, schema int), use func(T)) nats.MsgHandler {
	return func(m *nats.Msg) {
		var v T
		if err := decodeLive(m.Subject, m.Data, &v, head); err != nil {
			c.log.Debug().Err(err).Str("subject", m.Subject).Msg("ignored " + what)
			return
		}
		use(v)
	}
}

// decodeLive parses a live message and checks that the agent id in it is
// the subject's. Live messages are not recorded when bad: losing one is
// harmless by design.
func decodeLive[T any](subject string, data []byte, v *T, head func(*T) (agentID string, schema int)) error {
	subjAgent, _, err := parseAgentSubject(subject)
	if err != nil {
		return err
	}
	if len(data) > maxLiveBytes {
		return fmt.Errorf("%d bytes, more than %d", len(data), maxLiveBytes)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return err
	}
	id, schema := head(v)
	if schema < 1 || schema > protocol.SchemaVersion {
		return fmt.Errorf("schema %d, this build reads 1..%d", schema, protocol.SchemaVersion)
	}
	if id != subjAgent {
		return fmt.Errorf("subject names agent %q but the message says %q", subjAgent, id)
	}
	// A kind protocol validates (a heartbeat: its state) is checked too.
	if v, ok := any(v).(interface{ Validate() error }); ok {
		return v.Validate()
	}
	return nil
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
	c.reconcileDrain(hb)
	c.emit(EventHeartbeat, hb.AgentID, hb)
}

func (c *Controller) onProgress(p protocol.Progress) {
	c.live.putProgress(p)
	c.emit(EventProgress, p.AgentID, p)
}

func (c *Controller) onTelemetry(t protocol.TelemetryTick) {
	c.live.putTelemetry(t)
	c.emit(EventTelemetry, t.AgentID, t)
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
					c.emit(EventAgent, id, v)
				}
			}
		}
	}
}
