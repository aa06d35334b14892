package jobs

import (
	"sort"
	"strings"

	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/controller/store"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// selectOnline picks the agents a sweep that names none runs on: those
// online, carrying the sweep's agent_labels, not drained and not needing
// an upgrade; the ones it passed over for either are returned as skipped.
// When none is left, the error says which step left none.
func (sc *Scheduler) selectOnline(agents []AgentStatus, labels map[string]string) (chosen []AgentStatus, skipped []protocol.SkippedAgent, err error) {
	var online, labelled []AgentStatus
	for _, a := range agents {
		if !a.Online {
			continue
		}
		online = append(online, a)
		if !protocol.LabelsMatch(a.Labels, labels) {
			continue
		}
		labelled = append(labelled, a)
		if a.Drained {
			sc.log.Info().Str("agent", a.ID).Msg("sweep skips a drained agent")
			skipped = append(skipped, protocol.SkippedAgent{AgentID: a.ID, Reason: drainedSkip})
			continue
		}
		if a.Upgrade != nil {
			skipped = append(skipped, protocol.SkippedAgent{AgentID: a.ID, Reason: "needs an upgrade: it " + a.Upgrade.Reason})
			continue
		}
		chosen = append(chosen, a)
	}
	switch {
	case len(online) == 0:
		return nil, nil, api.BadSweepf("agents: no agent is online (%d known); name agents to queue jobs for offline ones", len(agents))
	case len(labelled) == 0:
		have := make([]string, len(online))
		for i, a := range online {
			have[i] = a.ID + " " + formatLabels(a.Labels)
		}
		return nil, nil, api.BadSweepf("agent_labels: no online agent carries %s (online: %s)", formatLabels(labels), strings.Join(have, ", "))
	case len(chosen) == 0:
		why := make([]string, len(skipped))
		for i, sk := range skipped {
			why[i] = sk.AgentID + ": " + sk.Reason
		}
		return nil, nil, api.BadSweepf("agents: no online agent that fits can take a job (%s)", strings.Join(why, "; "))
	}
	return chosen, skipped, nil
}

// drainedSkip is why a sweep passed over a drained agent.
const drainedSkip = "drained: it takes no new jobs until taken back (DELETE /api/agents/{id}/drain)"

// skipIdle lists the chosen agents that got no job, with why: a
// configuration entry that is wrong, or none of the sweep's deployments.
func skipIdle(s *protocol.Sweep, chosen []AgentStatus, jobs []store.JobRecord) {
	busy := map[string]bool{}
	for _, j := range jobs {
		busy[j.Job.AgentID] = true
	}
	for _, a := range chosen {
		if busy[a.ID] {
			continue
		}
		why := "it offers none of the sweep's deployments"
		if b := brokenReasons([]AgentStatus{a}, ""); b != "" {
			why = "it cannot serve the sweep's deployments: " + b
		}
		s.Skipped = append(s.Skipped, protocol.SkippedAgent{AgentID: a.ID, Reason: why})
	}
}

// formatLabels writes labels as {k=v, ...}, keys sorted, for errors.
func formatLabels(labels map[string]string) string {
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + labels[k]
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// drainedRefusal says why a sweep may not name a drained agent.
func drainedRefusal(i int, id string) error {
	return api.BadSweepf("agents[%d]: agent %q is drained: it takes no new jobs (DELETE /api/agents/%s/drain takes it back)", i, id, id)
}

// upgradeRefusal says why a sweep may not name agent id, which needs an
// upgrade.
func upgradeRefusal(i int, id string, u *api.AgentUpgrade) error {
	return api.BadSweepf("agents[%d]: agent %q needs an upgrade: it %s", i, id, u.Reason)
}
