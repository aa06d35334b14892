// Package client is the Go client of the controller's HTTP API
// (docs/api.md): every call the CLI makes goes through it, so there is one
// place that knows the routes, the body limits, the error shape and the
// event stream.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/vlmfleet/vlmfleet/controller"
	"github.com/vlmfleet/vlmfleet/controller/store"
	"github.com/vlmfleet/vlmfleet/explorer"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// Where the CLI finds a controller: the --controller flag, else the
// environment variable EnvURL, else DefaultURL.
const (
	DefaultURL = "http://127.0.0.1:8080"
	EnvURL     = "VLMFLEET_CONTROLLER"
)

// Bounds on what is read of an answer: one document, and a list or the
// explorer's dataset, which grow with the lab.
const (
	maxAnswer     = 64 << 20
	maxListAnswer = 512 << 20
)

// DefaultTimeout bounds one call other than the event stream; an import of
// 256 MiB over a slow link must fit.
const DefaultTimeout = 5 * time.Minute

// BaseURL picks the controller's URL: flagValue (the --controller flag)
// when set, else getenv(EnvURL), else DefaultURL, and checks it as New
// does. Its error names the flag or variable the URL came from.
func BaseURL(flagValue string, getenv func(string) string) (string, error) {
	if flagValue != "" {
		return checkBase("--controller", flagValue)
	}
	if getenv != nil {
		if v := getenv(EnvURL); v != "" {
			return checkBase(EnvURL, v)
		}
	}
	return DefaultURL, nil
}

func checkBase(source, s string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("%s %q: want a base URL such as %s", source, s, DefaultURL)
	}
	return strings.TrimRight(u.String(), "/"), nil
}

// Client calls one controller. It is safe for concurrent use.
type Client struct {
	base      string
	hc        *http.Client
	timeout   time.Duration
	source    string
	maxImport int
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient sends requests through hc. Its Timeout, if any, also
// bounds the event stream; prefer WithTimeout.
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.hc = hc } }

// WithTimeout bounds each call but the event stream (DefaultTimeout; 0: no bound).
func WithTimeout(d time.Duration) Option { return func(c *Client) { c.timeout = d } }

// WithSource names where the base URL came from ("--controller",
// "VLMFLEET_CONTROLLER"), for New's error.
func WithSource(name string) Option { return func(c *Client) { c.source = name } }

// New returns a client of the controller at baseURL: http or https with a
// host, and optionally a path prefix (a reverse proxy's).
func New(baseURL string, opts ...Option) (*Client, error) {
	c := &Client{hc: &http.Client{}, timeout: DefaultTimeout, source: "controller URL", maxImport: controller.MaxImportBody}
	for _, o := range opts {
		o(c)
	}
	base, err := checkBase(c.source, baseURL)
	if err != nil {
		return nil, err
	}
	c.base = base
	return c, nil
}

// URL is the controller's base URL, without a trailing slash.
func (c *Client) URL() string { return c.base }

// do sends one request and reads at most limit bytes of the answer,
// whatever its status: some errors carry a document (409 on a job cancel).
func (c *Client) do(ctx context.Context, method, path string, body []byte, limit int64) (int, []byte, error) {
	if c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return resp.StatusCode, nil, fmt.Errorf("reading the answer of %s %s: %w", method, path, err)
	}
	if int64(len(data)) > limit {
		return resp.StatusCode, nil, fmt.Errorf("the answer of %s %s is over %d bytes", method, path, limit)
	}
	return resp.StatusCode, data, nil
}

// call sends in (JSON, unless nil) and decodes an answer with status want
// into out; any other status is an *APIError.
func (c *Client) call(ctx context.Context, method, path string, in, out any, want int, limit int64) error {
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return fmt.Errorf("encoding the request: %w", err)
		}
	}
	status, data, err := c.do(ctx, method, path, body, limit)
	if err != nil {
		return err
	}
	if status != want {
		return decodeError(status, data)
	}
	return decodeAnswer(method, path, data, out)
}

func decodeAnswer(method, path string, data []byte, out any) error {
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("the answer of %s %s: %w", method, path, protocol.DescribeJSONError(data, 0, err))
	}
	return nil
}

func (c *Client) get(ctx context.Context, path string, out any, limit int64) error {
	return c.call(ctx, http.MethodGet, path, nil, out, http.StatusOK, limit)
}

// Health is the answer of GET /api/health.
type Health struct {
	Status        string    `json:"status"` // ok, or degraded when NATS is disconnected
	NATS          string    `json:"nats"`
	NATSURL       string    `json:"nats_url"`
	Version       string    `json:"version"`
	EventsDropped uint64    `json:"events_dropped"`
	Time          time.Time `json:"time"`
}

// Health asks whether the controller is up. A degraded controller (503:
// NATS disconnected) is an answer, not an error: see Health.Status.
func (c *Client) Health(ctx context.Context) (Health, error) {
	var h Health
	status, data, err := c.do(ctx, http.MethodGet, "/api/health", nil, maxAnswer)
	if err != nil {
		return h, fmt.Errorf("health: %w", err)
	}
	if status != http.StatusOK && status != http.StatusServiceUnavailable {
		return h, fmt.Errorf("health: %w", decodeError(status, data))
	}
	if err := decodeAnswer(http.MethodGet, "/api/health", data, &h); err != nil {
		return h, fmt.Errorf("health: %w", err)
	}
	return h, nil
}

// Agents lists every agent that ever announced itself, online or not.
func (c *Client) Agents(ctx context.Context) ([]controller.AgentView, error) {
	var out []controller.AgentView
	if err := c.get(ctx, "/api/agents", &out, maxListAnswer); err != nil {
		return nil, fmt.Errorf("list agents: %w", err)
	}
	return out, nil
}

// RunFilter narrows Runs; empty fields match everything.
type RunFilter struct {
	Agent, Status, Sweep string
	Source               string // lab or import
}

// Runs lists result documents without their per-request records, oldest first.
func (c *Client) Runs(ctx context.Context, f RunFilter) ([]protocol.Run, error) {
	q := query(map[string]string{"agent": f.Agent, "status": f.Status, "sweep": f.Sweep, "source": f.Source})
	var out []protocol.Run
	if err := c.get(ctx, "/api/runs"+q, &out, maxListAnswer); err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	return out, nil
}

// Run is one whole result document, per-request records included.
func (c *Client) Run(ctx context.Context, id string) (protocol.Run, error) {
	var r protocol.Run
	if err := c.get(ctx, "/api/runs/"+url.PathEscape(id), &r, maxAnswer); err != nil {
		return r, fmt.Errorf("run %s: %w", id, err)
	}
	return r, nil
}

// RunSummary is one result document without its per-request records.
func (c *Client) RunSummary(ctx context.Context, id string) (protocol.Run, error) {
	var r protocol.Run
	if err := c.get(ctx, "/api/runs/"+url.PathEscape(id)+"?requests=0", &r, maxAnswer); err != nil {
		return r, fmt.Errorf("run %s: %w", id, err)
	}
	return r, nil
}

// ImportResult is the answer of POST /api/runs/import, ids in request order.
type ImportResult struct {
	Imported int      `json:"imported"`
	IDs      []string `json:"ids"`
}

// Import stores result documents in one transaction: if the controller
// refuses one, it stores none. A request over the controller's limit
// (controller.MaxImportBody) is refused here, before anything is sent.
func (c *Client) Import(ctx context.Context, entries []store.ImportEntry) (ImportResult, error) {
	var out ImportResult
	body, err := json.Marshal(controller.ImportRequest{Runs: entries})
	if err != nil {
		return out, fmt.Errorf("import: encoding the runs: %w", err)
	}
	if len(body) > c.maxImport {
		return out, fmt.Errorf("import: the runs come to %d MiB, over the controller's %d MiB for one import; import them in smaller groups",
			len(body)>>20, c.maxImport>>20)
	}
	status, data, err := c.do(ctx, http.MethodPost, "/api/runs/import", body, maxAnswer)
	if err == nil && status != http.StatusOK {
		err = decodeError(status, data)
	}
	if err == nil {
		err = decodeAnswer(http.MethodPost, "/api/runs/import", data, &out)
	}
	if err != nil {
		return out, fmt.Errorf("import: %w", err)
	}
	return out, nil
}

// Sweeps lists every sweep with its status, oldest first.
func (c *Client) Sweeps(ctx context.Context) ([]controller.SweepView, error) {
	var out []controller.SweepView
	if err := c.get(ctx, "/api/sweeps", &out, maxListAnswer); err != nil {
		return nil, fmt.Errorf("list sweeps: %w", err)
	}
	return out, nil
}

// SubmitSweep submits s and returns it as stored, with its id and jobs.
// Every workload field is sent, so that an empty multi-image family or a
// request timeout of 0 arrive as such rather than as the defaults.
func (c *Client) SubmitSweep(ctx context.Context, s protocol.Sweep) (protocol.Sweep, error) {
	var out protocol.Sweep
	body, err := json.Marshal(s)
	if err != nil {
		return out, fmt.Errorf("submit sweep: encoding it: %w", err)
	}
	if len(body) > controller.MaxSweepBody {
		return out, fmt.Errorf("submit sweep: %d bytes, over the controller's %d", len(body), controller.MaxSweepBody)
	}
	status, data, err := c.do(ctx, http.MethodPost, "/api/sweeps", body, maxAnswer)
	if err == nil && status != http.StatusCreated {
		err = decodeError(status, data)
	}
	if err == nil {
		err = decodeAnswer(http.MethodPost, "/api/sweeps", data, &out)
	}
	if err != nil {
		return out, fmt.Errorf("submit sweep: %w", err)
	}
	return out, nil
}

// Sweep is one sweep with its status and every job.
func (c *Client) Sweep(ctx context.Context, id string) (controller.SweepView, error) {
	var v controller.SweepView
	if err := c.get(ctx, "/api/sweeps/"+url.PathEscape(id), &v, maxListAnswer); err != nil {
		return v, fmt.Errorf("sweep %s: %w", id, err)
	}
	return v, nil
}

// CancelSweep cancels every job of the sweep that has not ended and says
// what became of each. An unknown sweep is an error that Is ErrNotFound.
func (c *Client) CancelSweep(ctx context.Context, id string) (controller.SweepCancel, error) {
	var out controller.SweepCancel
	if err := c.call(ctx, http.MethodDelete, "/api/sweeps/"+url.PathEscape(id), nil, &out, http.StatusOK, maxAnswer); err != nil {
		return out, fmt.Errorf("cancel sweep %s: %w", id, err)
	}
	return out, nil
}

// JobFilter narrows Jobs; empty fields match everything.
type JobFilter struct {
	Sweep, Agent string
	State        protocol.JobState
	Active       bool // only jobs that have not ended
}

// Jobs lists jobs, oldest first.
func (c *Client) Jobs(ctx context.Context, f JobFilter) ([]controller.JobView, error) {
	active := ""
	if f.Active {
		active = "1"
	}
	q := query(map[string]string{"sweep": f.Sweep, "agent": f.Agent, "state": string(f.State), "active": active})
	var out []controller.JobView
	if err := c.get(ctx, "/api/jobs"+q, &out, maxListAnswer); err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	return out, nil
}

// Job is one job with its state history.
func (c *Client) Job(ctx context.Context, id string) (controller.JobView, error) {
	var v controller.JobView
	if err := c.get(ctx, "/api/jobs/"+url.PathEscape(id), &v, maxAnswer); err != nil {
		return v, fmt.Errorf("job %s: %w", id, err)
	}
	return v, nil
}

// CancelOutcome is what cancelling a job did.
type CancelOutcome int

const (
	// Cancelled: the controller marked the job cancelled (it was queued, or
	// its agent is offline). HTTP 200.
	Cancelled CancelOutcome = iota + 1
	// StopRequested: the job's agent was asked to stop it; it reports the
	// job cancelled when it has. HTTP 202.
	StopRequested
	// AlreadyEnded: the job had ended; nothing changed. HTTP 409.
	AlreadyEnded
)

// CancelJob cancels a job that has not ended and returns it as it stands
// with what the cancel did. An unknown job is an error that Is ErrNotFound.
func (c *Client) CancelJob(ctx context.Context, id string) (controller.JobView, CancelOutcome, error) {
	path := "/api/jobs/" + url.PathEscape(id)
	status, data, err := c.do(ctx, http.MethodDelete, path, nil, maxAnswer)
	if err != nil {
		return controller.JobView{}, 0, fmt.Errorf("cancel job %s: %w", id, err)
	}
	var v controller.JobView
	var outcome CancelOutcome
	switch status {
	case http.StatusOK:
		outcome, err = Cancelled, decodeAnswer(http.MethodDelete, path, data, &v)
	case http.StatusAccepted:
		outcome, err = StopRequested, decodeAnswer(http.MethodDelete, path, data, &v)
	case http.StatusConflict:
		var ended struct {
			Job controller.JobView `json:"job"`
		}
		outcome, err = AlreadyEnded, decodeAnswer(http.MethodDelete, path, data, &ended)
		v = ended.Job
	default:
		err = decodeError(status, data)
	}
	if err != nil {
		return v, 0, fmt.Errorf("cancel job %s: %w", id, err)
	}
	return v, outcome, nil
}

// Rejected lists the agent messages the controller refused, newest first;
// limit 0 asks for all it keeps.
func (c *Client) Rejected(ctx context.Context, limit int) ([]store.Rejection, error) {
	var out []store.Rejection
	if err := c.get(ctx, "/api/rejected?limit="+strconv.Itoa(limit), &out, maxListAnswer); err != nil {
		return nil, fmt.Errorf("list rejected messages: %w", err)
	}
	return out, nil
}

// Live is what the live page loads before it follows the events.
func (c *Client) Live(ctx context.Context) (controller.LiveSnapshot, error) {
	var out controller.LiveSnapshot
	if err := c.get(ctx, "/api/live", &out, maxListAnswer); err != nil {
		return out, fmt.Errorf("live snapshot: %w", err)
	}
	return out, nil
}

// ExplorerData is the explorer's dataset: every row with every measured
// point. A dataset of a schema this build does not read is an error.
func (c *Client) ExplorerData(ctx context.Context) (explorer.Dataset, error) {
	var ds explorer.Dataset
	if err := c.get(ctx, explorer.PathData, &ds, maxListAnswer); err != nil {
		return ds, fmt.Errorf("fetch explorer data: %w", err)
	}
	if ds.Schema < 1 || ds.Schema > explorer.SchemaVersion {
		return ds, fmt.Errorf("fetch explorer data: dataset schema %d, this build reads 1..%d", ds.Schema, explorer.SchemaVersion)
	}
	return ds, nil
}

// ExplorerRows is the explorer's table at q.
func (c *Client) ExplorerRows(ctx context.Context, q explorer.Query) (explorer.RowsResponse, error) {
	var out explorer.RowsResponse
	path := explorer.PathRows + "?" + url.Values{
		"size": {q.Size}, "cameras": {strconv.Itoa(q.Cameras)}, "images": {strconv.Itoa(q.Images)},
		"target": {strconv.FormatFloat(q.Target, 'g', -1, 64)},
	}.Encode()
	if err := c.get(ctx, path, &out, maxListAnswer); err != nil {
		return out, fmt.Errorf("explorer rows: %w", err)
	}
	return out, nil
}

// query encodes the non-empty parameters, with the "?" when there are any.
func query(params map[string]string) string {
	v := url.Values{}
	for k, s := range params {
		if s != "" {
			v.Set(k, s)
		}
	}
	if len(v) == 0 {
		return ""
	}
	return "?" + v.Encode()
}
