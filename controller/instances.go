package controller

import (
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/controller/store"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// instanceClaim is one process's claim on an agent id, from its hello or
// its heartbeats (protocol.AgentHello.Instance).
type instanceClaim struct {
	instance  string
	spoolLock string
	// hostname and startedAt come with a hello; a heartbeat leaves them.
	hostname  string
	startedAt time.Time
}

// heldInstance is the process that holds an agent id, and when it was
// last heard from. A holder that said it stopped is kept, so that a late
// message of it (a hello the events stream delivers again) is known as
// such and does not take the id back from its successor.
type heldInstance struct {
	instanceClaim
	lastSeen time.Time
	stopped  bool
}

// claimVerdict is what claim decides of one message's claim.
type claimVerdict int

const (
	// claimHeld: the process holds the id; its message is taken in.
	claimHeld claimVerdict = iota
	// claimRefused: another process holds the id; the message is refused.
	claimRefused
	// claimStale: the message says nothing of who runs now (it comes from
	// a process that said it stopped, or it is a hello from before the
	// holder started) and is let pass without a claim.
	claimStale
)

// agentInstances keeps one live process per agent id: the one that holds
// each id, and the other processes refused for it, until each stops.
// Agents of a release that sends no instance are not tracked.
type agentInstances struct {
	mu      sync.Mutex
	holders map[string]*heldInstance
	refused map[string]map[string]*api.AgentDuplicate
}

func newAgentInstances() *agentInstances {
	return &agentInstances{holders: map[string]*heldInstance{}, refused: map[string]map[string]*api.AgentDuplicate{}}
}

// claim decides whether process c may speak for agent id at now. It may
// when it holds the id already, when nothing holds it, when the holder
// stopped or was not heard from for timeout, or when both name one spool
// lock (no two live processes hold one: c is the holder restarted).
// Else it is refused, and kept as a duplicate of id; the holder is
// returned to say who holds the id. stored is the agent's stored record,
// which names the holder when the controller has heard no heartbeat since
// it started.
//
// Hellos come through the events stream, which may deliver one again or
// late, after heartbeats that core NATS carried on; such a hello is
// stale, not a claim (see claimVerdict).
func (ai *agentInstances) claim(id string, c instanceClaim, now time.Time, timeout time.Duration, stored *store.Agent) (heldInstance, claimVerdict) {
	if c.instance == "" {
		return heldInstance{}, claimHeld
	}
	ai.mu.Lock()
	defer ai.mu.Unlock()
	h := ai.holders[id]
	if h == nil && stored != nil && stored.Hello.Instance != "" {
		sh := stored.Hello
		h = &heldInstance{instanceClaim: instanceClaim{sh.Instance, sh.SpoolLock, sh.Hostname, sh.StartedAt}, lastSeen: stored.LastSeen}
	}
	if h != nil && h.stopped && h.instance == c.instance {
		return heldInstance{}, claimStale
	}
	// Only a hello carries its process's start.
	if h != nil && h.instance != c.instance && !c.startedAt.IsZero() && c.startedAt.Before(h.startedAt) {
		return heldInstance{}, claimStale
	}
	takes := h == nil || h.stopped || h.instance == c.instance || c.spoolLock != "" && c.spoolLock == h.spoolLock || now.Sub(h.lastSeen) >= timeout
	if !takes {
		ai.keepRefused(id, c, now)
		return *h, claimRefused
	}
	if h != nil && h.instance == c.instance && c.hostname == "" {
		c.hostname, c.startedAt = h.hostname, h.startedAt
	}
	ai.holders[id] = &heldInstance{instanceClaim: c, lastSeen: now}
	if dups := ai.refused[id]; dups != nil {
		delete(dups, c.instance)
	}
	return heldInstance{}, claimHeld
}

// keepRefused records process c as a duplicate of agent id, heard at now.
func (ai *agentInstances) keepRefused(id string, c instanceClaim, now time.Time) {
	dups := ai.refused[id]
	if dups == nil {
		dups = map[string]*api.AgentDuplicate{}
		ai.refused[id] = dups
	}
	d := dups[c.instance]
	if d == nil {
		d = &api.AgentDuplicate{Instance: c.instance}
		dups[c.instance] = d
	}
	if c.hostname != "" {
		d.Hostname, d.StartedAt = c.hostname, c.startedAt
	}
	d.LastSeen = now
}

// duplicates lists the processes refused for agent id that were heard
// from within timeout, oldest first; the others have stopped and are
// forgotten.
func (ai *agentInstances) duplicates(id string, now time.Time, timeout time.Duration) []api.AgentDuplicate {
	ai.mu.Lock()
	defer ai.mu.Unlock()
	dups := ai.refused[id]
	if len(dups) == 0 {
		return nil
	}
	var out []api.AgentDuplicate
	for _, inst := range slices.Sorted(maps.Keys(dups)) {
		d := dups[inst]
		if now.Sub(d.LastSeen) >= timeout {
			delete(dups, inst)
			continue
		}
		out = append(out, *d)
	}
	if len(dups) == 0 {
		delete(ai.refused, id)
	}
	slices.SortFunc(out, func(a, b api.AgentDuplicate) int { return a.StartedAt.Compare(b.StartedAt) })
	return out
}

// release lets agent id go when instance, which holds it, stops: the
// holder is kept, as stopped, so that neither its stored announcement nor
// a late message of it stands in for it.
func (ai *agentInstances) release(id, instance string) {
	ai.mu.Lock()
	defer ai.mu.Unlock()
	if h := ai.holders[id]; h != nil && h.instance == instance {
		h.stopped = true
	}
}

// forget drops what is known of agent id's processes.
func (ai *agentInstances) forget(id string) {
	ai.mu.Lock()
	defer ai.mu.Unlock()
	delete(ai.holders, id)
	delete(ai.refused, id)
}

// claimInstance is claim for the controller's agents; stored is read only
// when nothing in memory holds the id.
func (c *Controller) claimInstance(id string, claim instanceClaim, now time.Time) (heldInstance, claimVerdict) {
	var stored *store.Agent
	if a, err := c.store.Agent(id); err == nil {
		// The store's last-seen is written every persistSeenEvery; the
		// heartbeats' is newer.
		if l, ok := c.live.Presence(id); ok && l.LastSeen.After(a.LastSeen) {
			a.LastSeen = l.LastSeen
		}
		stored = &a
	}
	return c.instances.claim(id, claim, now, c.opt.HeartbeatTimeout, stored)
}

// duplicateRefusal is what a refused process is told: who holds the id
// and what to do.
func duplicateRefusal(id string, holder heldInstance, now time.Time) string {
	where := "another process"
	if holder.hostname != "" {
		where = fmt.Sprintf("a process on host %s", holder.hostname)
		if !holder.startedAt.IsZero() {
			where += fmt.Sprintf(" (started %s)", holder.startedAt.UTC().Format(time.RFC3339))
		}
	}
	return fmt.Sprintf("agent %q already runs as %s, heard %s ago; this controller keeps one process per agent id. "+
		"Stop one of them, or give this device an id of its own (another id in its configuration, with credentials for it: "+
		"vlmfleet join-token create, or vlmfleet agent-creds create NEWID)", id, where, now.Sub(holder.lastSeen).Round(time.Second))
}

// duplicateText says what /fleet and /api/health say of a duplicate d of
// agent a.
func duplicateText(a api.AgentView, d api.AgentDuplicate) string {
	host := d.Hostname
	if host == "" {
		host = "an unknown host"
	}
	return fmt.Sprintf("a second process claims its id from %s (instance %s), refused while the first (on %s) runs; stop one of them",
		host, d.Instance, a.Hostname)
}

// helloClaim is the claim a hello makes.
func helloClaim(h *protocol.AgentHello) instanceClaim {
	return instanceClaim{instance: h.Instance, spoolLock: h.SpoolLock, hostname: h.Hostname, startedAt: h.StartedAt}
}
