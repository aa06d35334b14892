package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/goccy/go-yaml"

	"github.com/vlmfleet/vlmfleet/controller"
	"github.com/vlmfleet/vlmfleet/protocol"
)

func cmdSweep(ctx context.Context, c *cli, args []string) error {
	fs := newFlagSet(c, "sweep")
	defURL := "http://127.0.0.1:8080"
	if v := c.getenv("VLMFLEET_CONTROLLER"); v != "" {
		defURL = v
	}
	base := fs.String("controller", defURL, "controller URL (default from $VLMFLEET_CONTROLLER)")
	file := fs.String("file", "", "sweep file (.yaml, .yml or .json); flags override its fields")
	name := fs.String("name", "", "a name for the sweep")
	agents := fs.String("agents", "", "comma-separated agent ids (default: every online agent)")
	deployments := fs.String("deployments", "", "comma-separated deployment ids (default: all the agents offer)")
	sizes := fs.String("sizes", "", "comma-separated image sizes of the camera levels (480p,720p,1080p,2K)")
	cameras := fs.String("cameras", "", "comma-separated camera levels, e.g. 1,2,4,8,16")
	requests := fs.Int("requests", 0, "measured requests per camera level")
	multiSizes := fs.String("multi-sizes", "", "comma-separated image sizes of the one-camera multi-image family ('none' to skip it)")
	images := fs.String("images", "", "comma-separated images per request of the multi-image family, e.g. 1,3,5")
	multiRequests := fs.Int("multi-requests", 0, "measured requests per multi-image combination")
	maxTokens := fs.Int("max-tokens", 0, "completion tokens per request")
	warmup := fs.Int("warmup", -1, "warm-up requests per camera before each combination")
	prompt := fs.String("prompt", "", "prompt sent with the images")
	wait := fs.Bool("wait", false, "follow progress until every job of the sweep has ended")
	cancelID := fs.String("cancel", "", "cancel the sweep (every job not ended) or the job with this id, instead of submitting")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected argument %q", fs.Arg(0))}
	}
	if *cancelID != "" {
		var other []string
		fs.Visit(func(f *flag.Flag) {
			if f.Name != "cancel" && f.Name != "controller" {
				other = append(other, "--"+f.Name)
			}
		})
		if len(other) > 0 {
			return usageError{fmt.Errorf("--cancel takes only --controller, not %s", strings.Join(other, ", "))}
		}
		if err := protocol.ValidateID("--cancel", *cancelID); err != nil {
			return usageError{err}
		}
		return cancelByID(ctx, c, strings.TrimRight(*base, "/"), *cancelID)
	}
	s := protocol.Sweep{Workload: protocol.DefaultWorkload()}
	if *file != "" {
		var err error
		if s, err = readSweepFile(*file); err != nil {
			return usageError{err}
		}
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	w := &s.Workload
	var err error
	if set["name"] {
		s.Name = *name
	}
	if set["agents"] {
		s.Agents = splitList(*agents)
	}
	if set["deployments"] {
		s.Deployments = splitList(*deployments)
	}
	if set["sizes"] {
		w.Sizes = splitList(*sizes)
	}
	if set["cameras"] {
		if w.Cameras, err = sweepInts("cameras", *cameras); err != nil {
			return usageError{err}
		}
	}
	if set["requests"] {
		w.RequestsPerLevel = *requests
	}
	if set["multi-sizes"] {
		w.MultiImageSizes = splitList(*multiSizes)
		if *multiSizes == "none" {
			w.MultiImageSizes, w.ImagesPerRequest = nil, nil
		}
	}
	if set["images"] {
		if w.ImagesPerRequest, err = sweepInts("images", *images); err != nil {
			return usageError{err}
		}
	}
	if set["multi-requests"] {
		w.MultiImageRequests = *multiRequests
	}
	if set["max-tokens"] {
		w.MaxTokens = *maxTokens
	}
	if set["warmup"] {
		w.WarmupRequests = *warmup
	}
	if set["prompt"] {
		w.Prompt = *prompt
	}
	if err := controller.ValidateSweep(s); err != nil {
		return usageError{err}
	}
	api := strings.TrimRight(*base, "/")
	created, err := postSweep(ctx, api, s)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "sweep %s: %d jobs, %d combinations each\n", created.ID, len(created.Jobs), len(created.Workload.Plan()))
	for _, j := range created.Jobs {
		fmt.Fprintf(c.stdout, "  %s\n", j)
	}
	if !*wait {
		fmt.Fprintf(c.stdout, "follow it at %s/live or with --wait; results: %s/api/runs?sweep=%s\n", api, api, created.ID)
		return nil
	}
	return waitSweep(ctx, c, api, created)
}

// readSweepFile reads a sweep from YAML or JSON; fields left out take the
// method's defaults. Errors name the file and line.
func readSweepFile(path string) (protocol.Sweep, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return protocol.Sweep{}, fmt.Errorf("sweep file: %w", err)
	}
	switch strings.ToLower(filepath.Ext(path)) {
	case ".yaml", ".yml":
		s := protocol.Sweep{Workload: protocol.DefaultWorkload()}
		if err := yaml.UnmarshalWithOptions(data, &s, yaml.DisallowUnknownField()); err != nil {
			return protocol.Sweep{}, fmt.Errorf("%s:\n%s", path, yaml.FormatError(err, false, true))
		}
		if err := controller.ValidateSweep(s); err != nil {
			return protocol.Sweep{}, fmt.Errorf("%s: %w", path, err)
		}
		return s, nil
	default:
		s, err := controller.DecodeSweep(data)
		if err != nil {
			return protocol.Sweep{}, fmt.Errorf("%s: %w", path, err)
		}
		return s, nil
	}
}

func sweepInts(flagName, s string) ([]int, error) {
	var out []int
	for _, p := range splitList(s) {
		n, err := strconv.Atoi(p)
		if err != nil {
			return nil, fmt.Errorf("--%s: %q is not a whole number", flagName, p)
		}
		out = append(out, n)
	}
	return out, nil
}

// apiError turns a non-2xx answer into an error carrying the server's message.
func apiError(resp *http.Response) error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var e struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil && e.Error != "" {
		return fmt.Errorf("controller: %s (HTTP %d)", e.Error, resp.StatusCode)
	}
	return fmt.Errorf("controller: HTTP %d: %s", resp.StatusCode, bytes.TrimSpace(body))
}

// sweepBody spells out the workload fields that protocol omits when empty:
// the controller fills omitted fields with the method's defaults, so an
// empty multi-image family must be sent as empty, not left out.
type sweepBody struct {
	protocol.Sweep
	Workload workloadBody `json:"workload"`
}

type workloadBody struct {
	protocol.Workload
	MultiImageSizes    []string `json:"multi_image_sizes"`
	ImagesPerRequest   []int    `json:"images_per_request"`
	MultiImageRequests int      `json:"multi_image_requests"`
	RequestTimeoutSec  float64  `json:"request_timeout_sec"`
}

func postSweep(ctx context.Context, api string, s protocol.Sweep) (protocol.Sweep, error) {
	w := s.Workload
	body, err := json.Marshal(sweepBody{Sweep: s, Workload: workloadBody{
		Workload: w, MultiImageSizes: w.MultiImageSizes, ImagesPerRequest: w.ImagesPerRequest,
		MultiImageRequests: w.MultiImageRequests, RequestTimeoutSec: w.RequestTimeoutSec,
	}})
	if err != nil {
		return protocol.Sweep{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, api+"/api/sweeps", bytes.NewReader(body))
	if err != nil {
		return protocol.Sweep{}, fmt.Errorf("controller URL %q: %w", api, err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return protocol.Sweep{}, fmt.Errorf("submit sweep to %s: %w", api, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		return protocol.Sweep{}, apiError(resp)
	}
	var out protocol.Sweep
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return protocol.Sweep{}, fmt.Errorf("read the controller's answer: %w", err)
	}
	return out, nil
}

func getSweepView(ctx context.Context, api, id string) (controller.SweepView, error) {
	var v controller.SweepView
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, api+"/api/sweeps/"+id, nil)
	if err != nil {
		return v, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return v, fmt.Errorf("sweep status: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return v, apiError(resp)
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		return v, fmt.Errorf("sweep status: %w", err)
	}
	return v, nil
}

type sseEvent struct {
	kind string
	data []byte
}

// followEvents reads the controller's event stream into ch until ctx ends
// or the stream breaks.
func followEvents(ctx context.Context, api string, ch chan<- sseEvent) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, api+"/api/events?kind=progress,state", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return apiError(resp)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	var ev sseEvent
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if ev.kind != "" {
				select {
				case ch <- ev:
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			ev = sseEvent{}
		case strings.HasPrefix(line, "event: "):
			ev.kind = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			ev.data = []byte(strings.TrimPrefix(line, "data: "))
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	return errors.New("event stream closed")
}

// waitSweep prints progress of the sweep's jobs until all have ended. The
// event stream drives it; a periodic status check covers lost events.
func waitSweep(ctx context.Context, c *cli, api string, s protocol.Sweep) error {
	mine := map[string]bool{}
	for _, j := range s.Jobs {
		mine[j] = true
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	events := make(chan sseEvent, 64)
	go func() {
		for ctx.Err() == nil {
			if err := followEvents(ctx, api, events); err != nil && ctx.Err() == nil {
				c.log.Debug().Err(err).Msg("event stream; reconnecting")
				select {
				case <-time.After(time.Second):
				case <-ctx.Done():
				}
			}
		}
	}()
	poll := time.NewTicker(5 * time.Second)
	defer poll.Stop()
	lastLine := time.Time{}
	check := func() (bool, error) {
		v, err := getSweepView(ctx, api, s.ID)
		if err != nil {
			return false, err
		}
		if !v.Status.Done {
			return false, nil
		}
		if c.tty {
			fmt.Fprint(c.stderr, "\r\033[K")
		}
		fmt.Fprintf(c.stdout, "sweep %s done: %d jobs, %d completed, %d not\n", s.ID, v.Status.Jobs, v.Status.States[protocol.JobCompleted], v.Status.Failed)
		for _, j := range v.JobList {
			line := fmt.Sprintf("  %s  %-10s agent %s  deployment %s", j.ID, j.State, j.AgentID, j.Deployment)
			if j.RunID != "" {
				line += "  run " + j.RunID
			}
			if j.Error != "" {
				line += "  error: " + j.Error
			}
			fmt.Fprintln(c.stdout, line)
		}
		fmt.Fprintf(c.stdout, "results: %s/api/runs?sweep=%s\n", api, s.ID)
		if v.Status.Failed > 0 {
			return true, fmt.Errorf("sweep %s: %d of %d jobs did not complete", s.ID, v.Status.Failed, v.Status.Jobs)
		}
		return true, nil
	}
	if done, err := check(); done || err != nil {
		return err
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-poll.C:
			if done, err := check(); done {
				return err
			} else if err != nil {
				c.log.Warn().Err(err).Msg("sweep status")
			}
		case ev := <-events:
			switch ev.kind {
			case controller.EventProgress:
				var p protocol.Progress
				if json.Unmarshal(ev.data, &p) != nil || !mine[p.JobID] {
					continue
				}
				line := fmt.Sprintf("%s %s [%d/%d %s] %s %d/%d", p.AgentID, p.Phase, p.ComboIdx+1, p.ComboN, p.Combo, progressBar(p.Done+p.Failed, p.Total, 20), p.Done, p.Total)
				if p.MeanTTFT > 0 {
					line += fmt.Sprintf(" TTFT %.2fs", p.MeanTTFT)
				}
				if p.Simulated {
					line += " SIMULATED"
				}
				if c.tty {
					fmt.Fprintf(c.stderr, "\r\033[K%s", line)
				} else if time.Since(lastLine) >= 2*time.Second || p.Done+p.Failed == p.Total {
					fmt.Fprintln(c.stderr, line)
					lastLine = time.Now()
				}
			case controller.EventState:
				var st protocol.JobStateChange
				if json.Unmarshal(ev.data, &st) != nil || !mine[st.JobID] {
					continue
				}
				if c.tty {
					fmt.Fprint(c.stderr, "\r\033[K")
				}
				msg := fmt.Sprintf("job %s on %s: %s", st.JobID, st.AgentID, st.State)
				if st.Error != "" {
					msg += ": " + st.Error
				}
				fmt.Fprintln(c.stderr, msg)
				if st.State.Terminal() {
					if done, err := check(); done {
						return err
					}
				}
			}
		}
	}
}

func progressBar(done, total, width int) string {
	if total <= 0 {
		return strings.Repeat("·", width)
	}
	n := min(width, done*width/total)
	return strings.Repeat("█", n) + strings.Repeat("·", width-n)
}

// cancelByID cancels a sweep or, when no sweep has the id, a job. A job
// that had already ended is reported, not an error: nothing was left to do.
func cancelByID(ctx context.Context, c *cli, api, id string) error {
	code, body, err := deleteAPI(ctx, api+"/api/sweeps/"+id)
	if err != nil {
		return err
	}
	switch code {
	case http.StatusOK:
		var sw controller.SweepCancel
		if err := json.Unmarshal(body, &sw); err != nil {
			return fmt.Errorf("read the controller's answer: %w", err)
		}
		fmt.Fprintf(c.stdout, "sweep %s: %d jobs cancelled, %d asked to stop (their agents report when they have), %d had already ended\n",
			id, len(sw.Cancelled), len(sw.Requested), len(sw.Ended))
		for _, j := range sw.Requested {
			fmt.Fprintf(c.stdout, "  stopping %s\n", j)
		}
		return nil
	case http.StatusNotFound:
	default:
		return bodyError(code, body)
	}
	code, body, err = deleteAPI(ctx, api+"/api/jobs/"+id)
	if err != nil {
		return err
	}
	var v controller.JobView
	switch code {
	case http.StatusOK, http.StatusAccepted:
		if err := json.Unmarshal(body, &v); err != nil {
			return fmt.Errorf("read the controller's answer: %w", err)
		}
	case http.StatusConflict:
		var conflict struct {
			Job controller.JobView `json:"job"`
		}
		if err := json.Unmarshal(body, &conflict); err != nil {
			return fmt.Errorf("read the controller's answer: %w", err)
		}
		fmt.Fprintf(c.stdout, "job %s had already ended (%s); nothing cancelled\n", id, conflict.Job.State)
		return nil
	case http.StatusNotFound:
		return fmt.Errorf("controller %s knows no sweep or job %q", api, id)
	default:
		return bodyError(code, body)
	}
	if v.State == protocol.JobCancelled {
		fmt.Fprintf(c.stdout, "job %s: cancelled\n", id)
	} else {
		fmt.Fprintf(c.stdout, "job %s: agent %s asked to stop it (%s); it reports cancelled when it has\n", id, v.AgentID, v.State)
	}
	return nil
}

// deleteAPI sends DELETE and returns the status and at most 1 MiB of body.
func deleteAPI(ctx context.Context, url string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, url, nil)
	if err != nil {
		return 0, nil, fmt.Errorf("controller URL: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("cancel: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return 0, nil, fmt.Errorf("cancel: read the controller's answer: %w", err)
	}
	return resp.StatusCode, body, nil
}

// bodyError is apiError for a body already read.
func bodyError(code int, body []byte) error {
	var e struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil && e.Error != "" {
		return fmt.Errorf("controller: %s (HTTP %d)", e.Error, code)
	}
	return fmt.Errorf("controller: HTTP %d: %s", code, bytes.TrimSpace(body))
}
