package jobs

import (
	"time"

	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/controller/store"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// Why a job is stalled (JobView.StallReason).
const (
	stallAgentOffline   = "its agent is offline; JetStream delivers it again when the agent returns"
	stallAgentRestarted = "its agent restarted without it; JetStream delivers it again within the ack wait"
	stallAgentLostIt    = "its agent reports it is not running it; JetStream delivers it again within the ack wait"
)

// lostJobGrace is how long an online agent's heartbeats must have said
// something other than busy with a job before the job counts as lost: a
// heartbeat (core NATS) may overtake the job's final state (JetStream).
const lostJobGrace = 10 * time.Second

// needsAgent reports whether a job in state s is in its agent's hands; a
// queued job waits for an offline agent by design.
func needsAgent(s protocol.JobState) bool {
	return s == protocol.JobAccepted || s == protocol.JobStarting || s == protocol.JobRunning
}

// AgentsByID indexes agents for View; an agent missing from it counts
// as offline.
func AgentsByID(agents []AgentStatus) map[string]AgentStatus {
	m := make(map[string]AgentStatus, len(agents))
	for _, a := range agents {
		m[a.ID] = a
	}
	return m
}

// StalledSince says whether the job is stalled, since when, and why: a job
// in its agent's hands (needsAgent) whose agent is offline, or online but
// without it. The agent is without it when its latest announcement is from
// a start after the job's last state (both agent clock), or when its
// heartbeats have said, since after the job's last update and for
// lostJobGrace (both controller clock), that it is idle or busy with
// another job. The job's next state (its redelivery's accepted) ends it.
func StalledSince(r store.JobRecord, agents map[string]AgentStatus, now time.Time) (bool, time.Time, string) {
	if !needsAgent(r.State) {
		return false, time.Time{}, ""
	}
	a, known := agents[r.Job.AgentID]
	if !known || !a.Online {
		since := r.UpdatedAt
		if a.LastSeen.After(since) {
			since = a.LastSeen
		}
		return true, since, stallAgentOffline
	}
	if last, ok := lastStateTime(r); ok && a.StartedAt.After(last) {
		return true, r.UpdatedAt, stallAgentRestarted
	}
	if !a.StateSince.IsZero() && (a.State != protocol.AgentBusy || a.JobID != r.Job.ID) &&
		a.StateSince.After(r.UpdatedAt) && now.Sub(a.StateSince) >= lostJobGrace {
		return true, r.UpdatedAt, stallAgentLostIt
	}
	return false, time.Time{}, ""
}

// lastStateTime is when the agent reported the job's current state and
// attempt, by its own clock.
func lastStateTime(r store.JobRecord) (time.Time, bool) {
	for i := len(r.History) - 1; i >= 0; i-- {
		if e := r.History[i]; e.State == r.State && e.Attempt == r.Attempt {
			return e.Time, !e.Time.IsZero()
		}
	}
	return time.Time{}, false
}

// Views shows jobs as the API does.
func Views(jobs []store.JobRecord, agents map[string]AgentStatus) []api.JobView {
	out := make([]api.JobView, 0, len(jobs))
	for _, j := range jobs {
		out = append(out, View(j, agents))
	}
	return out
}

// View shows one job as the API does, stalled or not.
func View(r store.JobRecord, agents map[string]AgentStatus) api.JobView {
	h := make([]api.JobHistoryEntry, len(r.History))
	for i, e := range r.History {
		h[i] = api.JobHistoryEntry(e)
	}
	v := api.JobView{
		ID: r.Job.ID, SweepID: r.Job.SweepID, AgentID: r.Job.AgentID, Deployment: r.Job.Deployment, Power: r.Job.Power,
		State: r.State, Attempt: r.Attempt, Error: r.Error, RunID: r.RunID, Published: r.Published,
		StreamSeq: r.StreamSeq, CancelRequested: r.CancelRequested,
		CreatedAt: r.Job.CreatedAt, UpdatedAt: r.UpdatedAt, Workload: r.Job.Workload, History: h,
	}
	v.Stalled, v.StalledSince, v.StallReason = StalledSince(r, agents, time.Now())
	return v
}

// SweepStatus counts a sweep's jobs by state and tells the stalled.
func SweepStatus(id string, jobs []store.JobRecord, agents map[string]AgentStatus) api.SweepStatus {
	st := api.SweepStatus{ID: id, Jobs: len(jobs), States: map[protocol.JobState]int{}, Done: true}
	now := time.Now()
	for _, j := range jobs {
		st.States[j.State]++
		if stalled, _, _ := StalledSince(j, agents, now); stalled {
			st.Stalled++
		}
		if !j.State.Terminal() {
			st.Done = false
		} else if j.State != protocol.JobCompleted {
			st.Failed++
		}
	}
	return st
}
