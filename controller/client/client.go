// Package client is the Go client of the controller's HTTP API
// (docs/api.md): every call the CLI makes goes through it, so there is one
// place that knows the routes, the body limits, the error shape and the
// event stream.
package client

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/controller/explorerapi"
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
// 64 MiB (api.MaxImportBody) over a slow link must fit.
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
	// pageLimit is the page size list asks for: the most a controller
	// gives, for the fewest round trips.
	pageLimit int
	token     string
	// tlsConfig, or caFile and caPin, are how https connections trust
	// the controller (WithTLS, WithCA).
	tlsConfig     *tls.Config
	caFile, caPin string
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
	c := &Client{hc: &http.Client{}, timeout: DefaultTimeout, source: "controller URL", maxImport: api.MaxImportBody, pageLimit: api.MaxListLimit}
	for _, o := range opts {
		o(c)
	}
	base, err := checkBase(c.source, baseURL)
	if err != nil {
		return nil, err
	}
	c.base = base
	if err := c.setupTLS(); err != nil {
		return nil, err
	}
	return c, nil
}

// URL is the controller's base URL, without a trailing slash.
func (c *Client) URL() string { return c.base }

// do sends one request and reads at most limit bytes of the answer,
// whatever its status: some errors carry a document (409 on a job cancel).
func (c *Client) do(ctx context.Context, method, path string, body []byte, limit int64) (int, []byte, error) {
	status, _, data, err := c.doHeader(ctx, method, path, body, limit)
	return status, data, err
}

// doHeader is do that also returns the answer's header.
func (c *Client) doHeader(ctx context.Context, method, path string, body []byte, limit int64) (int, http.Header, []byte, error) {
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
		return 0, nil, nil, err
	}
	req.Header.Set("Accept", "application/json")
	c.authorize(req)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, nil, nil, untrustedHint(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return resp.StatusCode, resp.Header, nil, fmt.Errorf("reading the answer of %s %s: %w", method, path, err)
	}
	if int64(len(data)) > limit {
		return resp.StatusCode, resp.Header, nil, fmt.Errorf("the answer of %s %s is over %d bytes", method, path, limit)
	}
	return resp.StatusCode, resp.Header, data, nil
}

// call sends body (JSON, unless nil) and decodes an answer whose status is
// one of want as a T; any other status is an *APIError. Its errors begin
// with what.
func call[T any](ctx context.Context, c *Client, what, method, path string, body []byte, limit int64, want ...int) (T, error) {
	var out T
	status, data, err := c.do(ctx, method, path, body, limit)
	if err == nil && !slices.Contains(want, status) {
		err = decodeError(status, data)
	}
	if err == nil {
		err = decodeAnswer(method, path, data, &out)
	}
	if err != nil {
		var zero T
		return zero, fmt.Errorf("%s: %w", what, err)
	}
	return out, nil
}

// get is call for a GET answered 200.
func get[T any](ctx context.Context, c *Client, what, path string, limit int64) (T, error) {
	return call[T](ctx, c, what, http.MethodGet, path, nil, limit, http.StatusOK)
}

// list is get for a list endpoint: it asks for pages of pageLimit and
// follows each page's Link rel="next" to the end, so the caller gets the
// whole list. The pages together are bounded by limit; the pages of one list are
// read one after another, each from where the last ended, so what was
// written meanwhile neither repeats nor is skipped before the position.
func list[T any](ctx context.Context, c *Client, what, path string, limit int64) ([]T, error) {
	out := []T{}
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	next := path + sep + "limit=" + strconv.Itoa(c.pageLimit)
	var total int64
	for next != "" {
		status, h, data, err := c.doHeader(ctx, http.MethodGet, next, nil, limit)
		if err == nil && status != http.StatusOK {
			err = decodeError(status, data)
		}
		var page []T
		if err == nil {
			err = decodeAnswer(http.MethodGet, next, data, &page)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		out = append(out, page...)
		// A controller that keeps linking to more must not keep the
		// client reading: the whole list is bounded as one answer is, and
		// a page before the last is never empty.
		total += int64(len(data))
		link := api.NextLink(h)
		switch {
		case link != "" && len(page) == 0:
			err = fmt.Errorf("the answer of GET %s is an empty page with a next page", next)
		case link != "" && link == next:
			err = fmt.Errorf("the answer of GET %s names itself as the next page", next)
		case link != "" && total > limit:
			err = fmt.Errorf("the pages of GET %s come to over %d bytes", path, limit)
		}
		if err == nil {
			next, err = nextPage(path, link)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
	}
	return out, nil
}

// nextPage is the request of the page a Link target names: the list's own
// path (a reverse proxy may serve the API under a prefix the controller
// does not know) with the target's query, which carries the cursor.
func nextPage(path, link string) (string, error) {
	if link == "" {
		return "", nil
	}
	u, err := url.Parse(link)
	if err != nil || u.RawQuery == "" {
		return "", fmt.Errorf("the controller's Link rel=\"next\" %q is not a page of this list", link)
	}
	p, _, _ := strings.Cut(path, "?")
	return p + "?" + u.RawQuery, nil
}

func decodeAnswer(method, path string, data []byte, out any) error {
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("the answer of %s %s: %w", method, path, protocol.DescribeJSONError(data, 0, err))
	}
	return nil
}

// Health is the answer of GET /api/health: the controller's own type.
type Health = api.Health

// Backup copies the controller's store, consistent while it runs, to w
// (GET /api/backup) and returns the bytes copied. A copy cut short is an
// error. Only ctx bounds it: a large store takes a while.
func (c *Client) Backup(ctx context.Context, w io.Writer) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/api/backup", nil)
	if err != nil {
		return 0, fmt.Errorf("backup: %w", err)
	}
	c.authorize(req)
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, fmt.Errorf("backup: %w", untrustedHint(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
		return 0, fmt.Errorf("backup: %w", decodeError(resp.StatusCode, data))
	}
	n, err := io.Copy(w, resp.Body)
	if err == nil && resp.ContentLength >= 0 && n != resp.ContentLength {
		err = fmt.Errorf("got %d of %d bytes", n, resp.ContentLength)
	}
	if err != nil {
		return n, fmt.Errorf("backup: %w", err)
	}
	return n, nil
}

// Health asks whether the controller is up. A degraded or failing
// controller (503) is an answer, not an error: see Health.Status and
// Health.Problems.
func (c *Client) Health(ctx context.Context) (Health, error) {
	return call[Health](ctx, c, "health", http.MethodGet, "/api/health", nil, maxAnswer, http.StatusOK, http.StatusServiceUnavailable)
}

// Agents lists every agent that ever announced itself, online or not.
func (c *Client) Agents(ctx context.Context) ([]api.AgentView, error) {
	return get[[]api.AgentView](ctx, c, "list agents", "/api/agents", maxListAnswer)
}

// RunFilter narrows Runs; empty fields match everything.
type RunFilter struct {
	Agent, Status, Sweep string
	Source               string // lab or import
	// NoSeries leaves out the combinations' telemetry series, most of a
	// listed run's bytes: for an answer or a count over many runs.
	NoSeries bool
}

// Runs lists result documents without their per-request records, oldest
// first, following every page of GET /api/runs.
func (c *Client) Runs(ctx context.Context, f RunFilter) ([]protocol.Run, error) {
	series := ""
	if f.NoSeries {
		series = "0"
	}
	q := query(map[string]string{"agent": f.Agent, "status": f.Status, "sweep": f.Sweep, "source": f.Source, "series": series})
	runs, err := list[protocol.Run](ctx, c, "list runs", "/api/runs"+q, maxListAnswer)
	// The API lists runs in id order; oldest first is what a person reads
	// and what exports were written in before the API had pages.
	sort.SliceStable(runs, func(i, j int) bool {
		if !runs[i].CreatedAt.Equal(runs[j].CreatedAt) {
			return runs[i].CreatedAt.Before(runs[j].CreatedAt)
		}
		return runs[i].ID < runs[j].ID
	})
	return runs, err
}

// Run is one whole result document, per-request records included.
func (c *Client) Run(ctx context.Context, id string) (protocol.Run, error) {
	return get[protocol.Run](ctx, c, "run "+id, "/api/runs/"+url.PathEscape(id), maxAnswer)
}

// RunSummary is one result document without its per-request records.
func (c *Client) RunSummary(ctx context.Context, id string) (protocol.Run, error) {
	return get[protocol.Run](ctx, c, "run "+id, "/api/runs/"+url.PathEscape(id)+"?requests=0", maxAnswer)
}

// ImportResult is the answer of POST /api/runs/import, ids in request order.
type ImportResult struct {
	Imported int      `json:"imported"`
	IDs      []string `json:"ids"`
}

// Import stores result documents in one transaction: if the controller
// refuses one, it stores none. A request over the controller's limits
// (api.MaxImportDocument for one document, api.MaxImportBody
// for all) is refused here, before anything is sent.
func (c *Client) Import(ctx context.Context, entries []api.ImportEntry) (ImportResult, error) {
	var out ImportResult
	body := []byte(`{"runs":[`)
	for i, e := range entries {
		doc, err := json.Marshal(e)
		if err != nil {
			return out, fmt.Errorf("import: encoding runs[%d]: %w", i, err)
		}
		if len(doc) > api.MaxImportDocument {
			return out, fmt.Errorf("import: runs[%d] (%s) is %.1f MiB, over the %d MiB a controller takes for one result document",
				i, e.Origin, float64(len(doc))/(1<<20), api.MaxImportDocument>>20)
		}
		if i > 0 {
			body = append(body, ',')
		}
		body = append(body, doc...)
	}
	body = append(body, "]}"...)
	if len(body) > c.maxImport {
		return out, fmt.Errorf("import: the runs come to %d MiB, over the controller's %d MiB for one import; import them in smaller groups",
			len(body)>>20, c.maxImport>>20)
	}
	return call[ImportResult](ctx, c, "import", http.MethodPost, "/api/runs/import", body, maxAnswer, http.StatusOK)
}

// Sweeps lists every sweep with its status, oldest first, following every
// page of GET /api/sweeps.
func (c *Client) Sweeps(ctx context.Context) ([]api.SweepView, error) {
	return list[api.SweepView](ctx, c, "list sweeps", "/api/sweeps", maxListAnswer)
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
	if len(body) > api.MaxSweepBody {
		return out, fmt.Errorf("submit sweep: %d bytes, over the controller's %d", len(body), api.MaxSweepBody)
	}
	return call[protocol.Sweep](ctx, c, "submit sweep", http.MethodPost, "/api/sweeps", body, maxAnswer, http.StatusCreated)
}

// SubmitSweepYAML submits a sweep file in YAML as the controller reads it
// (its defaults, its refusals); an error in it is an *APIError with the
// line, column and field the controller names.
func (c *Client) SubmitSweepYAML(ctx context.Context, yaml string) (protocol.Sweep, error) {
	var out protocol.Sweep
	body, err := json.Marshal(map[string]string{"yaml": yaml})
	if err != nil {
		return out, fmt.Errorf("submit sweep: encoding it: %w", err)
	}
	if len(body) > api.MaxSweepBody {
		return out, fmt.Errorf("submit sweep: %d bytes, over the controller's %d", len(body), api.MaxSweepBody)
	}
	return call[protocol.Sweep](ctx, c, "submit sweep", http.MethodPost, "/api/sweeps", body, maxAnswer, http.StatusCreated)
}

// Sweep is one sweep with its status and every job.
func (c *Client) Sweep(ctx context.Context, id string) (api.SweepView, error) {
	return get[api.SweepView](ctx, c, "sweep "+id, "/api/sweeps/"+url.PathEscape(id), maxListAnswer)
}

// CancelSweep cancels every job of the sweep that has not ended and says
// what became of each. An unknown sweep is an error that Is ErrNotFound.
func (c *Client) CancelSweep(ctx context.Context, id string) (api.SweepCancel, error) {
	return call[api.SweepCancel](ctx, c, "cancel sweep "+id, http.MethodDelete, "/api/sweeps/"+url.PathEscape(id), nil, maxAnswer, http.StatusOK)
}

// JobFilter narrows Jobs; empty fields match everything.
type JobFilter struct {
	Sweep, Agent string
	State        protocol.JobState
	Active       bool // only jobs that have not ended
}

// Jobs lists jobs in id order (oldest first: a job's id starts with its
// sweep's, which starts with the time), following every page of
// GET /api/jobs.
func (c *Client) Jobs(ctx context.Context, f JobFilter) ([]api.JobView, error) {
	active := ""
	if f.Active {
		active = "1"
	}
	q := query(map[string]string{"sweep": f.Sweep, "agent": f.Agent, "state": string(f.State), "active": active})
	return list[api.JobView](ctx, c, "list jobs", "/api/jobs"+q, maxListAnswer)
}

// Job is one job with its state history.
func (c *Client) Job(ctx context.Context, id string) (api.JobView, error) {
	return get[api.JobView](ctx, c, "job "+id, "/api/jobs/"+url.PathEscape(id), maxAnswer)
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
func (c *Client) CancelJob(ctx context.Context, id string) (api.JobView, CancelOutcome, error) {
	path := "/api/jobs/" + url.PathEscape(id)
	status, data, err := c.do(ctx, http.MethodDelete, path, nil, maxAnswer)
	if err != nil {
		return api.JobView{}, 0, fmt.Errorf("cancel job %s: %w", id, err)
	}
	var v api.JobView
	var outcome CancelOutcome
	switch status {
	case http.StatusOK:
		outcome, err = Cancelled, decodeAnswer(http.MethodDelete, path, data, &v)
	case http.StatusAccepted:
		outcome, err = StopRequested, decodeAnswer(http.MethodDelete, path, data, &v)
	case http.StatusConflict:
		var ended struct {
			Job api.JobView `json:"job"`
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
// limit 0 asks for all it keeps, following every page of GET /api/rejected.
func (c *Client) Rejected(ctx context.Context, limit int) ([]api.Rejection, error) {
	if limit > 0 && limit <= api.MaxListLimit {
		return get[[]api.Rejection](ctx, c, "list rejected messages", "/api/rejected?limit="+strconv.Itoa(limit), maxListAnswer)
	}
	rej, err := list[api.Rejection](ctx, c, "list rejected messages", "/api/rejected", maxListAnswer)
	if limit > 0 && len(rej) > limit {
		rej = rej[:limit]
	}
	return rej, err
}

// Live is what the live page loads before it follows the events.
func (c *Client) Live(ctx context.Context) (api.LiveSnapshot, error) {
	return get[api.LiveSnapshot](ctx, c, "live snapshot", "/api/live", maxListAnswer)
}

// ExplorerData is the explorer's dataset: every row with every measured
// point. A dataset of a schema this build does not read is an error.
func (c *Client) ExplorerData(ctx context.Context) (explorerapi.Dataset, error) {
	ds, err := get[explorerapi.Dataset](ctx, c, "fetch explorer data", explorerapi.PathData, maxListAnswer)
	if err != nil {
		return ds, err
	}
	if ds.Schema < 1 || ds.Schema > explorerapi.SchemaVersion {
		return ds, fmt.Errorf("fetch explorer data: dataset schema %d, this build reads 1..%d", ds.Schema, explorerapi.SchemaVersion)
	}
	return ds, nil
}

// ExplorerRows is the explorer's table at q.
func (c *Client) ExplorerRows(ctx context.Context, q explorerapi.Query) (explorerapi.RowsResponse, error) {
	path := explorerapi.PathRows + "?" + q.Values().Encode()
	return get[explorerapi.RowsResponse](ctx, c, "explorer rows", path, maxListAnswer)
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
