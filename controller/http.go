package controller

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/vlmfleet/vlmfleet/controller/store"
	"github.com/vlmfleet/vlmfleet/protocol"
)

func (c *Controller) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/health", c.handleHealth)
	mux.HandleFunc("GET /api/agents", c.handleAgents)
	mux.HandleFunc("GET /api/runs", c.handleRuns)
	mux.HandleFunc("GET /api/runs/{id}", c.handleRun)
	mux.HandleFunc("POST /api/runs/import", c.handleImport)
	mux.HandleFunc("GET /api/sweeps", c.handleSweeps)
	mux.HandleFunc("POST /api/sweeps", c.handleSubmitSweep)
	mux.HandleFunc("GET /api/sweeps/{id}", c.handleSweep)
	mux.HandleFunc("DELETE /api/sweeps/{id}", c.handleCancelSweep)
	mux.HandleFunc("GET /api/jobs", c.handleJobs)
	mux.HandleFunc("GET /api/jobs/{id}", c.handleJob)
	mux.HandleFunc("DELETE /api/jobs/{id}", c.handleCancelJob)
	mux.HandleFunc("GET /api/rejected", c.handleRejected)
	mux.HandleFunc("GET /api/live", c.handleLiveSnapshot)
	mux.HandleFunc("GET /api/events", c.handleEvents)
	mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, fmt.Errorf("no API endpoint %s %s (see docs/api.md)", r.Method, r.URL.Path))
	})
	mux.HandleFunc("GET /live", c.handleLivePage)
	if c.opt.Explorer != nil {
		ex := c.opt.Explorer(c.store.Summaries())
		mux.Handle("/", ex)
		// The explorer owns its API paths; the more specific pattern wins
		// over the catch-all "/api/" 404 above.
		mux.Handle("/api/explorer/", ex)
	} else {
		mux.HandleFunc("GET /{$}", handlePlaceholder)
	}
	return mux
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

func writeError(w http.ResponseWriter, status int, err error) {
	writeJSON(w, status, map[string]string{"error": err.Error()})
}

// statusOf maps store and validation errors to HTTP statuses.
func statusOf(err error) int {
	var bad *BadSweepError
	var imp *store.ImportError
	switch {
	case errors.Is(err, store.ErrNotFound):
		return http.StatusNotFound
	case errors.As(err, &bad), errors.As(err, &imp):
		return http.StatusBadRequest
	}
	return http.StatusInternalServerError
}

// readBody reads at most limit bytes, answering 413 beyond.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, bool) {
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, http.StatusRequestEntityTooLarge, fmt.Errorf("request body over %d bytes", limit))
		} else {
			writeError(w, http.StatusBadRequest, fmt.Errorf("read request body: %w", err))
		}
		return nil, false
	}
	return data, true
}

func (c *Controller) handleHealth(w http.ResponseWriter, r *http.Request) {
	nats := "connected"
	status := http.StatusOK
	if c.nc == nil || !c.nc.IsConnected() {
		nats, status = "disconnected", http.StatusServiceUnavailable
	}
	writeJSON(w, status, map[string]any{
		"status":         map[bool]string{true: "ok", false: "degraded"}[status == http.StatusOK],
		"nats":           nats,
		"nats_url":       c.natsURL,
		"version":        c.opt.Version,
		"events_dropped": c.events.dropped.Load(),
		"time":           time.Now().UTC(),
	})
}

func (c *Controller) handleAgents(w http.ResponseWriter, r *http.Request) {
	agents, err := c.Agents(r.Context())
	if err != nil {
		writeError(w, statusOf(err), err)
		return
	}
	writeJSON(w, http.StatusOK, agents)
}

func (c *Controller) handleRuns(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	runs, err := c.store.ListRuns(r.Context(), store.RunQuery{
		AgentID: q.Get("agent"), Status: q.Get("status"), SweepID: q.Get("sweep"), Source: q.Get("source"),
	})
	if err != nil {
		writeError(w, statusOf(err), err)
		return
	}
	if runs == nil {
		runs = []protocol.Run{}
	}
	writeJSON(w, http.StatusOK, runs)
}

func (c *Controller) handleRun(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var run protocol.Run
	var err error
	if v := r.URL.Query().Get("requests"); v == "0" || v == "false" {
		run, err = c.store.RunSummary(r.Context(), id)
	} else {
		run, err = c.store.Run(r.Context(), id)
	}
	if err != nil {
		writeError(w, statusOf(err), err)
		return
	}
	writeJSON(w, http.StatusOK, run)
}

func (c *Controller) handleImport(w http.ResponseWriter, r *http.Request) {
	data, ok := readBody(w, r, MaxImportBody)
	if !ok {
		return
	}
	entries, err := DecodeImportRequest(data)
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	ids, err := c.store.ImportRuns(entries)
	if err != nil {
		writeError(w, statusOf(err), err)
		return
	}
	c.log.Info().Int("runs", len(ids)).Msg("imported runs")
	writeJSON(w, http.StatusOK, map[string]any{"imported": len(ids), "ids": ids})
}

func (c *Controller) handleSweeps(w http.ResponseWriter, r *http.Request) {
	sweeps, err := c.store.Sweeps(r.Context())
	if err != nil {
		writeError(w, statusOf(err), err)
		return
	}
	jobs, err := c.store.Jobs(r.Context(), store.JobQuery{})
	if err != nil {
		writeError(w, statusOf(err), err)
		return
	}
	agents, err := c.Agents(r.Context())
	if err != nil {
		writeError(w, statusOf(err), err)
		return
	}
	byAgent := agentsByID(agents)
	bySweep := map[string][]store.JobRecord{}
	for _, j := range jobs {
		bySweep[j.Job.SweepID] = append(bySweep[j.Job.SweepID], j)
	}
	out := make([]SweepView, 0, len(sweeps))
	for _, s := range sweeps {
		out = append(out, SweepView{Sweep: s, Status: sweepStatus(s.ID, bySweep[s.ID], byAgent)})
	}
	writeJSON(w, http.StatusOK, out)
}

func (c *Controller) handleSubmitSweep(w http.ResponseWriter, r *http.Request) {
	data, ok := readBody(w, r, MaxSweepBody)
	if !ok {
		return
	}
	s, err := DecodeSweep(data)
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	s, err = c.SubmitSweep(r.Context(), s)
	if err != nil {
		writeError(w, statusOf(err), err)
		return
	}
	w.Header().Set("Location", "/api/sweeps/"+s.ID)
	writeJSON(w, http.StatusCreated, s)
}

func (c *Controller) handleSweep(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	s, err := c.store.Sweep(id)
	if err != nil {
		writeError(w, statusOf(err), err)
		return
	}
	jobs, err := c.store.Jobs(r.Context(), store.JobQuery{SweepID: id})
	if err != nil {
		writeError(w, statusOf(err), err)
		return
	}
	agents, err := c.Agents(r.Context())
	if err != nil {
		writeError(w, statusOf(err), err)
		return
	}
	byAgent := agentsByID(agents)
	v := SweepView{Sweep: s, Status: sweepStatus(id, jobs, byAgent), JobList: make([]JobView, 0, len(jobs))}
	for _, j := range jobs {
		v.JobList = append(v.JobList, jobView(j, byAgent))
	}
	writeJSON(w, http.StatusOK, v)
}

func (c *Controller) handleJobs(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	jobs, err := c.store.Jobs(r.Context(), store.JobQuery{
		SweepID: q.Get("sweep"), AgentID: q.Get("agent"), State: protocol.JobState(q.Get("state")),
		Active: q.Get("active") == "1" || q.Get("active") == "true",
	})
	if err != nil {
		writeError(w, statusOf(err), err)
		return
	}
	agents, err := c.Agents(r.Context())
	if err != nil {
		writeError(w, statusOf(err), err)
		return
	}
	byAgent := agentsByID(agents)
	out := make([]JobView, 0, len(jobs))
	for _, j := range jobs {
		out = append(out, jobView(j, byAgent))
	}
	writeJSON(w, http.StatusOK, out)
}

func (c *Controller) handleJob(w http.ResponseWriter, r *http.Request) {
	j, err := c.Job(r.Context(), r.PathValue("id"))
	if err != nil {
		writeError(w, statusOf(err), err)
		return
	}
	writeJSON(w, http.StatusOK, j)
}

// handleCancelJob answers 200 with the job marked cancelled, 202 with the
// job its agent was asked to stop (it reports cancelled), or 409 with the
// job as it is when it had already ended.
func (c *Controller) handleCancelJob(w http.ResponseWriter, r *http.Request) {
	rec, err := c.CancelJob(r.Context(), r.PathValue("id"))
	var ended *JobEndedError
	if err != nil && !errors.As(err, &ended) {
		writeError(w, statusOf(err), err)
		return
	}
	agents, aerr := c.Agents(r.Context())
	if aerr != nil {
		writeError(w, statusOf(aerr), aerr)
		return
	}
	v := jobView(rec, agentsByID(agents))
	switch {
	case ended != nil:
		writeJSON(w, http.StatusConflict, map[string]any{"error": ended.Error(), "job": v})
	case rec.State == protocol.JobCancelled:
		writeJSON(w, http.StatusOK, v)
	default:
		writeJSON(w, http.StatusAccepted, v)
	}
}

// handleCancelSweep cancels every job of the sweep that has not ended and
// answers 200 with what became of each.
func (c *Controller) handleCancelSweep(w http.ResponseWriter, r *http.Request) {
	res, err := c.CancelSweep(r.Context(), r.PathValue("id"))
	if err != nil {
		writeError(w, statusOf(err), err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

func (c *Controller) handleRejected(w http.ResponseWriter, r *http.Request) {
	limit := 100
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			writeError(w, http.StatusBadRequest, fmt.Errorf("limit %q: want a whole number, 0 for all", v))
			return
		}
		limit = n
	}
	rej, err := c.store.Rejected(r.Context(), limit)
	if err != nil {
		writeError(w, statusOf(err), err)
		return
	}
	if rej == nil {
		rej = []store.Rejection{}
	}
	writeJSON(w, http.StatusOK, rej)
}

// LiveSnapshot is what the live page loads before following /api/events.
type LiveSnapshot struct {
	Agents    []AgentView                         `json:"agents"`
	Jobs      []JobView                           `json:"jobs"`
	Progress  []protocol.Progress                 `json:"progress"`
	Telemetry map[string][]protocol.TelemetryTick `json:"telemetry"`
}

func (c *Controller) handleLiveSnapshot(w http.ResponseWriter, r *http.Request) {
	agents, err := c.Agents(r.Context())
	if err != nil {
		writeError(w, statusOf(err), err)
		return
	}
	jobs, err := c.store.Jobs(r.Context(), store.JobQuery{Active: true})
	if err != nil {
		writeError(w, statusOf(err), err)
		return
	}
	snap := LiveSnapshot{Agents: agents, Jobs: make([]JobView, 0, len(jobs))}
	byAgent := agentsByID(agents)
	for _, j := range jobs {
		snap.Jobs = append(snap.Jobs, jobView(j, byAgent))
	}
	snap.Progress, snap.Telemetry = c.live.snapshot()
	if snap.Progress == nil {
		snap.Progress = []protocol.Progress{}
	}
	writeJSON(w, http.StatusOK, snap)
}

func handlePlaceholder(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = io.WriteString(w, `<!doctype html><html><head><meta charset="utf-8"><title>vlmfleet</title></head>
<body style="font-family:system-ui,sans-serif;margin:2em">
<h1>vlmfleet controller</h1>
<p>The explorer is not mounted in this build.</p>
<ul><li><a href="/live">Live progress</a></li><li><a href="/api/runs">Runs (JSON)</a></li><li><a href="/api/agents">Agents (JSON)</a></li></ul>
</body></html>`)
}
