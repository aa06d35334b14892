package controller

import (
	"net/http"
	"time"

	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/controller/jobs"
	"github.com/vlmfleet/vlmfleet/controller/store"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// servePage makes the handler of a list endpoint: one page of what load
// lists, as a JSON array, with a Link rel="next" header while more follow
// (docs/api.md, "Lists and pages"). newestFirst is the list's order when
// the request names none.
func servePage[T any](kind listKind, newestFirst bool, load func(r *http.Request, p store.Page) ([]T, string, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		pr, err := parsePage(r, kind, newestFirst)
		var items []T
		var next string
		if err == nil {
			items, next, err = load(r, pr.page)
		}
		if err != nil {
			api.WriteError(w, statusOf(err), err)
			return
		}
		if items == nil {
			items = []T{}
		}
		pr.setNext(w, next)
		api.WriteJSON(w, http.StatusOK, items)
	}
}

func (c *Controller) listRuns(r *http.Request, p store.Page) ([]protocol.Run, string, error) {
	q := r.URL.Query()
	return c.store.RunsPage(r.Context(), store.RunQuery{
		AgentID: q.Get("agent"), Status: q.Get("status"), SweepID: q.Get("sweep"), Source: q.Get("source"),
		NoSeries: q.Get("series") == "0",
	}, p)
}

func (c *Controller) listJobs(r *http.Request, p store.Page) ([]api.JobView, string, error) {
	q := r.URL.Query()
	recs, next, err := c.store.JobsPage(r.Context(), store.JobQuery{
		SweepID: q.Get("sweep"), AgentID: q.Get("agent"), State: protocol.JobState(q.Get("state")),
		Active: q.Get("active") == "1" || q.Get("active") == "true",
	}, p)
	if err != nil {
		return nil, "", err
	}
	agents, err := c.agentStatuses(r.Context())
	if err != nil {
		return nil, "", err
	}
	return jobs.Views(recs, jobs.AgentsByID(agents)), next, nil
}

// listSweeps shows the page's sweeps with their jobs counted by the
// store's tallies, kept in memory, and only the jobs that have not ended
// checked for stalls: no job is read from the file.
func (c *Controller) listSweeps(r *http.Request, p store.Page) ([]api.SweepView, string, error) {
	sweeps, next, err := c.store.SweepsPage(r.Context(), p)
	if err != nil {
		return nil, "", err
	}
	ids := make([]string, 0, len(sweeps))
	for _, s := range sweeps {
		ids = append(ids, s.ID)
	}
	counts := c.store.SweepJobStates(ids)
	open := map[string][]store.JobRecord{}
	for _, j := range c.store.OpenJobs("") {
		open[j.Job.SweepID] = append(open[j.Job.SweepID], j)
	}
	agents, err := c.agentStatuses(r.Context())
	if err != nil {
		return nil, "", err
	}
	byAgent := jobs.AgentsByID(agents)
	now := time.Now()
	out := make([]api.SweepView, 0, len(sweeps))
	for _, s := range sweeps {
		out = append(out, api.SweepView{Sweep: s, Status: tallyStatus(s.ID, counts[s.ID], open[s.ID], byAgent, now)})
	}
	return out, next, nil
}

// tallyStatus is jobs.SweepStatus from the sweep's jobs counted by state and
// the records of those that have not ended (only they can be stalled).
func tallyStatus(id string, states map[protocol.JobState]int, open []store.JobRecord, agents map[string]jobs.AgentStatus, now time.Time) api.SweepStatus {
	st := api.SweepStatus{ID: id, States: map[protocol.JobState]int{}, Done: true}
	for s, n := range states {
		st.States[s] = n
		st.Jobs += n
		if !s.Terminal() {
			st.Done = false
		} else if s != protocol.JobCompleted {
			st.Failed += n
		}
	}
	for _, j := range open {
		if stalled, _, _ := jobs.StalledSince(j, agents, now); stalled {
			st.Stalled++
		}
	}
	return st
}

func (c *Controller) listRejected(r *http.Request, p store.Page) ([]api.Rejection, string, error) {
	rs, next, err := c.store.RejectedPage(r.Context(), p)
	if err != nil {
		return nil, "", err
	}
	out := make([]api.Rejection, len(rs))
	for i, rj := range rs {
		out[i] = api.Rejection(rj)
	}
	return out, next, nil
}
