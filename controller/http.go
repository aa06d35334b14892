package controller

import (
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/vlmfleet/vlmfleet/controller/access"
	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/controller/identity"
	"github.com/vlmfleet/vlmfleet/controller/jobs"
	"github.com/vlmfleet/vlmfleet/controller/store"
	"github.com/vlmfleet/vlmfleet/controller/sweepfile"
	"github.com/vlmfleet/vlmfleet/protocol"
)

func (c *Controller) routes() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/health", c.handleHealth)
	mux.HandleFunc("GET /api/agents", c.serveAgents)
	mux.HandleFunc("DELETE /api/agents/{id}", serveJSON(c.handleForgetAgent))
	mux.HandleFunc("POST /api/agents/{id}/credentials", c.handleCreateCredentials)
	mux.HandleFunc("DELETE /api/agents/{id}/credentials", c.handleRevokeCredentials)
	mux.HandleFunc("/api/agents/{id}/drain", serveJSON(c.handleDrain))
	mux.HandleFunc("POST /api/join-tokens", c.handleCreateJoinToken)
	mux.HandleFunc("GET /api/join-tokens", serveJSON(c.handleJoinTokens))
	mux.HandleFunc("DELETE /api/join-tokens/{id}", serveJSON(c.handleRevokeJoinToken))
	mux.HandleFunc("POST "+access.JoinPath, c.handleJoin)
	mux.HandleFunc("GET /api/runs", servePage(kindRuns, false, c.listRuns))
	mux.HandleFunc("GET /api/runs/{id}", serveJSON(c.handleRun))
	mux.HandleFunc("POST /api/runs/import", c.handleImport)
	mux.HandleFunc("GET /api/sweeps", servePage(kindSweeps, false, c.listSweeps))
	mux.HandleFunc("POST /api/sweeps", c.handleSubmitSweep)
	mux.HandleFunc("GET /api/sweeps/{id}", serveJSON(c.handleSweep))
	mux.HandleFunc("DELETE /api/sweeps/{id}", serveJSON(c.handleCancelSweep))
	mux.HandleFunc("GET /api/jobs", servePage(kindJobs, false, c.listJobs))
	mux.HandleFunc("GET /api/jobs/{id}", serveJSON(c.handleJob))
	mux.HandleFunc("DELETE /api/jobs/{id}", c.handleCancelJob)
	mux.HandleFunc("GET /api/rejected", servePage(kindRejected, true, c.listRejected))
	mux.HandleFunc("GET /api/live", serveJSON(c.handleLiveSnapshot))
	mux.HandleFunc("GET /api/backup", c.handleBackup)
	mux.Handle("GET /metrics", c.metrics.handler())
	c.profileRoutes(mux)
	mux.HandleFunc("GET /api/events", c.feed.ServeEvents)
	mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		api.WriteError(w, http.StatusNotFound, fmt.Errorf("no API endpoint %s %s (see docs/api.md)", r.Method, r.URL.Path))
	})
	mux.HandleFunc("GET /live", webFile("live.html"))
	mux.HandleFunc("GET /fleet", webFile("fleet.html"))
	mux.HandleFunc("GET /sweeps", webFile("sweeps.html"))
	mux.HandleFunc("GET /sweeps/{id}", webFile("sweep.html"))
	mux.HandleFunc("GET /lab/lab.css", webFile("lab.css"))
	mux.HandleFunc("GET /lab/lab.js", webFile("lab.js"))
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

// serveJSON makes the handler of an endpoint that answers 200 with what
// load returns, as JSON, or load's error with the status statusOf maps it to.
func serveJSON[T any](load func(r *http.Request) (T, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		v, err := load(r)
		if err != nil {
			api.WriteError(w, statusOf(err), err)
			return
		}
		api.WriteJSON(w, http.StatusOK, v)
	}
}

// requestError is what is wrong with a request, and the status it answers.
type requestError struct {
	status int
	err    error
}

func (e *requestError) Error() string { return e.err.Error() }
func (e *requestError) Unwrap() error { return e.err }

// statusOf maps request, store and validation errors to HTTP statuses.
func statusOf(err error) int {
	var req *requestError
	var tokenReq *identity.TokenRequestError
	var bad *api.BadSweepError
	var imp *store.ImportError
	switch {
	case errors.As(err, &req):
		return req.status
	case errors.As(err, &tokenReq):
		return tokenReq.Status
	case errors.Is(err, store.ErrNotFound):
		return http.StatusNotFound
	case errors.As(err, &bad), errors.As(err, &imp):
		return http.StatusBadRequest
	}
	return http.StatusInternalServerError
}

// readRequest reads at most limit bytes (413 beyond) and decodes them (400
// when decode fails).
func readRequest[T any](w http.ResponseWriter, r *http.Request, limit int64, decode func([]byte) (T, error)) (T, error) {
	var zero T
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return zero, &requestError{http.StatusRequestEntityTooLarge, fmt.Errorf("request body over %d bytes", limit)}
		}
		return zero, &requestError{access.BodyStalledStatus(err, http.StatusBadRequest), fmt.Errorf("read request body: %w", err)}
	}
	v, err := decode(data)
	if err != nil {
		return zero, &requestError{http.StatusBadRequest, err}
	}
	return v, nil
}

func (c *Controller) handleRun(r *http.Request) (protocol.Run, error) {
	id := r.PathValue("id")
	if v := r.URL.Query().Get("requests"); v == "0" || v == "false" {
		return c.store.RunSummary(r.Context(), id)
	}
	return c.store.Run(r.Context(), id)
}

func (c *Controller) handleSubmitSweep(w http.ResponseWriter, r *http.Request) {
	s, err := readRequest(w, r, api.MaxSweepBody, sweepfile.Decode)
	if err == nil {
		s, err = c.SubmitSweep(r.Context(), s)
	}
	if err != nil {
		api.WriteError(w, statusOf(err), err)
		return
	}
	w.Header().Set("Location", "/api/sweeps/"+s.ID)
	api.WriteJSON(w, http.StatusCreated, s)
}

func (c *Controller) handleSweep(r *http.Request) (api.SweepView, error) {
	id := r.PathValue("id")
	s, err := c.store.Sweep(id)
	if err != nil {
		return api.SweepView{}, err
	}
	recs, agents, err := c.jobsWithAgents(r.Context(), store.JobQuery{SweepID: id})
	if err != nil {
		return api.SweepView{}, err
	}
	byAgent := jobs.AgentsByID(agents)
	return api.SweepView{Sweep: s, Status: jobs.SweepStatus(id, recs, byAgent), JobList: jobs.Views(recs, byAgent)}, nil
}

func (c *Controller) handleJob(r *http.Request) (api.JobView, error) {
	return c.Job(r.Context(), r.PathValue("id"))
}

// handleCancelJob answers 200 with the job marked cancelled, 202 with the
// job its agent was asked to stop (it reports cancelled), or 409 with the
// job as it is when it had already ended.
func (c *Controller) handleCancelJob(w http.ResponseWriter, r *http.Request) {
	rec, err := c.CancelJob(r.Context(), r.PathValue("id"))
	var ended *jobs.JobEndedError
	if err != nil && !errors.As(err, &ended) {
		api.WriteError(w, statusOf(err), err)
		return
	}
	agents, aerr := c.agentStatuses(r.Context())
	if aerr != nil {
		api.WriteError(w, statusOf(aerr), aerr)
		return
	}
	v := jobs.View(rec, jobs.AgentsByID(agents))
	switch {
	case ended != nil:
		api.WriteJSON(w, http.StatusConflict, map[string]any{"error": ended.Error(), "job": v})
	case rec.State == protocol.JobCancelled:
		api.WriteJSON(w, http.StatusOK, v)
	default:
		api.WriteJSON(w, http.StatusAccepted, v)
	}
}

// handleCancelSweep cancels every job of the sweep that has not ended and
// answers 200 with what became of each.
func (c *Controller) handleCancelSweep(r *http.Request) (api.SweepCancel, error) {
	return c.CancelSweep(r.Context(), r.PathValue("id"))
}

// handleLiveSnapshot reads the active jobs and the agents from memory,
// not the store's file: the live page asks whenever it (re)connects.
func (c *Controller) handleLiveSnapshot(r *http.Request) (api.LiveSnapshot, error) {
	active := c.store.ActiveJobs()
	agents, err := c.agentStatuses(r.Context())
	if err != nil {
		return api.LiveSnapshot{}, err
	}
	snap := api.LiveSnapshot{Agents: agentViews(agents), Jobs: jobs.Views(active, jobs.AgentsByID(agents))}
	snap.Progress, snap.Telemetry = c.live.Snapshot()
	if snap.Progress == nil {
		snap.Progress = []protocol.Progress{}
	}
	return snap, nil
}

// placeholderPage is "/" when the explorer is not mounted.
const placeholderPage = `<!doctype html><html><head><meta charset="utf-8"><title>vlmfleet</title>
<style>body { font-family: system-ui, sans-serif; margin: 2em; }</style></head>
<body>
<h1>vlmfleet controller</h1>
<p>The explorer is not mounted in this build.</p>
<ul><li><a href="/live">Live progress</a></li><li><a href="/api/runs">Runs (JSON)</a></li><li><a href="/api/agents">Agents (JSON)</a></li></ul>
</body></html>`

var placeholderPolicy = pagePolicy([]byte(placeholderPage))

func handlePlaceholder(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", placeholderPolicy)
	_, _ = io.WriteString(w, placeholderPage)
}
