package jobs

import (
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/controller/store"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// A job in its agent's hands is stalled when the agent is online without
// it: restarted after the job's last state, or saying for lostJobGrace that
// it is idle or busy with another job. Heartbeats that a state overtook
// or may still overtake do not count.
func TestStalledWhenTheAgentIsOnlineWithoutTheJob(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	now := t0.Add(time.Minute)
	running := store.JobRecord{
		Job: protocol.Job{ID: "j1", AgentID: "a1"}, State: protocol.JobRunning, Attempt: 1,
		UpdatedAt: t0.Add(time.Second),
		History: []store.JobHistoryEntry{
			{State: protocol.JobAccepted, Attempt: 1, Time: t0.Add(-time.Second)},
			{State: protocol.JobRunning, Attempt: 1, Time: t0, ReceivedAt: t0.Add(time.Second)},
		},
	}
	agent := func(started time.Time, state, job string, since time.Time) map[string]AgentStatus {
		return map[string]AgentStatus{"a1": {AgentView: api.AgentView{ID: "a1", Online: true, StartedAt: started, State: state, JobID: job}, StateSince: since}}
	}
	for _, tc := range []struct {
		name   string
		agents map[string]AgentStatus
		reason string
	}{
		{"busy with it", agent(t0.Add(-time.Hour), protocol.AgentBusy, "j1", t0), ""},
		{"restarted since", agent(t0.Add(10*time.Second), protocol.AgentIdle, "", now.Add(-time.Second)), stallAgentRestarted},
		{"idle since before the job", agent(t0.Add(-time.Hour), protocol.AgentIdle, "", t0.Add(-time.Hour)), ""},
		{"idle, lately", agent(t0.Add(-time.Hour), protocol.AgentIdle, "", now.Add(-lostJobGrace/2)), ""},
		{"idle for the grace", agent(t0.Add(-time.Hour), protocol.AgentIdle, "", now.Add(-lostJobGrace)), stallAgentLostIt},
		{"busy with another", agent(t0.Add(-time.Hour), protocol.AgentBusy, "j2", t0.Add(2*time.Second)), stallAgentLostIt},
		{"no heartbeat yet", agent(t0.Add(-time.Hour), "", "", time.Time{}), ""},
		{"offline", map[string]AgentStatus{}, stallAgentOffline},
	} {
		stalled, since, reason := StalledSince(running, tc.agents, now)
		if stalled != (tc.reason != "") || reason != tc.reason {
			t.Errorf("%s: stalled %v, reason %q; want %q", tc.name, stalled, reason, tc.reason)
		}
		if stalled && since.Before(running.UpdatedAt) {
			t.Errorf("%s: stalled since %s, before the job's update %s", tc.name, since, running.UpdatedAt)
		}
	}

	// The redelivered attempt's accepted, after the restart, ends it.
	again := running
	again.State, again.Attempt, again.UpdatedAt = protocol.JobAccepted, 2, now
	again.History = append(again.History, store.JobHistoryEntry{State: protocol.JobAccepted, Attempt: 2, Time: t0.Add(20 * time.Second)})
	if stalled, _, reason := StalledSince(again, agent(t0.Add(10*time.Second), protocol.AgentBusy, "j1", now), now); stalled {
		t.Errorf("redelivered job stalled: %q", reason)
	}
}
