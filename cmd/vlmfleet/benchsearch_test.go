package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// crowdedEndpoint serves "fake-vlm" and answers later the more requests it
// holds: 5 ms per request in flight, and half a second more once they
// exceed knee, as an engine does when its batch is full. With refuse, a
// request past the knee is refused with HTTP 503 instead, and those
// admitted answer as the knee's. Each request
// first waits 30 ms, so that a level's requests, sent together, have all
// arrived when it counts them.
func crowdedEndpoint(t *testing.T, knee int64, refuse bool) *httptest.Server {
	t.Helper()
	var inFlight, admitted atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !isChat(w, r) {
			return
		}
		inFlight.Add(1)
		defer inFlight.Add(-1)
		if !pause(r, 30*time.Millisecond) {
			return
		}
		in := inFlight.Load()
		if refuse {
			if admitted.Add(1) > knee {
				admitted.Add(-1)
				http.Error(w, `{"error":"server busy"}`, http.StatusServiceUnavailable)
				return
			}
			defer admitted.Add(-1)
			in = min(in, knee)
		}
		wait := time.Duration(in) * 5 * time.Millisecond
		if in > knee {
			wait += 500 * time.Millisecond
		}
		streamAnswer(w, r, wait)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// isChat answers what the fake endpoints serve besides their chat
// completions (the model list; nothing else) and says whether r is a chat
// completion, for the caller to answer.
func isChat(w http.ResponseWriter, r *http.Request) bool {
	switch r.URL.Path {
	case "/v1/models":
		fmt.Fprint(w, `{"object":"list","data":[{"id":"fake-vlm","object":"model"}]}`)
		return false
	case "/v1/chat/completions":
		return true
	}
	http.NotFound(w, r)
	return false
}

// streamAnswer streams a two-token answer whose first token comes wait
// after the role chunk, as vLLM streams one.
func streamAnswer(w http.ResponseWriter, r *http.Request, wait time.Duration) {
	w.Header().Set("Content-Type", "text/event-stream")
	fl := w.(http.Flusher)
	event := func(data string) { fmt.Fprintf(w, "data: %s\n\n", data); fl.Flush() }
	event(`{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}`)
	if !pause(r, wait) {
		return
	}
	event(`{"choices":[{"index":0,"delta":{"content":"A"}}]}`)
	event(`{"choices":[{"index":0,"delta":{"content":" street"}}]}`)
	event(`{"choices":[],"usage":{"prompt_tokens":300,"completion_tokens":2}}`)
	event(`[DONE]`)
}

// pause waits d, or until the client leaves (false).
func pause(r *http.Request, d time.Duration) bool {
	select {
	case <-time.After(d):
		return true
	case <-r.Context().Done():
		return false
	}
}

// benchSearch benches srv's 480p ladder of one image per request, one
// request per camera and no warm-up, every level one round (--load burst:
// these tests are of the search's steps, which are the same under either
// load; benchload_test.go has the sustained search), with the flags
// given, and returns the summary and the run.
func benchSearch(t *testing.T, srv *httptest.Server, flags ...string) (string, *protocol.Run) {
	t.Helper()
	jsonPath := filepath.Join(t.TempDir(), "run.json")
	args := append([]string{"bench", "--url", srv.URL + "/v1", "--model", "fake-vlm", "--sizes", "480p", "--multi-sizes", "none",
		"--requests", "1", "--warmup", "0", "--max-tokens", "8", "--load", "burst", "--image-dir", snapshotDir(t), "--json", jsonPath}, flags...)
	code, out, errOut := runCLI(t, args...)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	return out, readRun(t, jsonPath)
}

// levels lists the run's camera levels in the order measured, a level
// found by search marked "*", and whether each kept up under j.
func levels(run *protocol.Run, j protocol.Judgement) (order []string, passed map[int]bool) {
	passed = map[int]bool{}
	for i := range run.Combinations {
		c := &run.Combinations[i]
		name := fmt.Sprint(c.Cameras)
		if c.Search {
			name += "*"
		}
		order = append(order, name)
		passed[c.Cameras] = j.Passes(c.Figures())
	}
	return order, passed
}

// maxCamerasLine is the summary's Max Cameras at 480p.
var maxCamerasLine = regexp.MustCompile(`(?m)^  480p +(\S+) +\((sustained|one round, as published)\)$`)

func summaryMaxCameras(t *testing.T, out string) string {
	t.Helper()
	m := maxCamerasLine.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no Max Cameras at 480p in the summary:\n%s", out)
	}
	return m[1]
}

// The ladder tops out at 16 cameras while the endpoint keeps up with 23:
// --search doubles to 32 (which fails), then halves the gap from 16 to 32
// until 23 passes and 24, measured, fails. Bench says 23, not "16+".
func TestBenchSearchAboveTheLadder(t *testing.T) {
	j := protocol.Judgement{TargetSec: 0.3}
	out, run := benchSearch(t, crowdedEndpoint(t, 23, false), "--cameras", "1,2,4,8,16", "--search", "--target", "0.3")
	t.Log(out)
	order, passed := levels(run, j)
	if want := []string{"1", "2", "4", "8", "16", "32*", "24*", "20*", "22*", "23*"}; !slices.Equal(order, want) {
		t.Errorf("levels measured %v, want the ladder, then 32 and halving (%v)", order, want)
	}
	if !passed[23] || passed[24] {
		t.Errorf("23 passed %v, 24 passed %v; want 23 to keep up and 24 not", passed[23], passed[24])
	}
	if got := summaryMaxCameras(t, out); got != "23" {
		t.Errorf("Max Cameras %q, want 23:\n%s", got, out)
	}
	if run.Workload.Search != protocol.DefaultSearchCeiling || run.Workload.Judgement != j {
		t.Errorf("run's workload: search %d, judgement %+v", run.Workload.Search, run.Workload.Judgement)
	}
	if !strings.Contains(out, "mean response time within 0.3 s over the requests that completed, failed requests left out") ||
		!strings.Contains(out, "(search)") {
		t.Errorf("the summary does not say the judgement or mark the searched levels:\n%s", out)
	}
}

// The endpoint keeps up with 5 cameras: the ladder's 4 passes and 8 fails,
// and the search measures 6 (fails) and 5 (passes), nothing more.
func TestBenchSearchBetweenLadderLevels(t *testing.T) {
	j := protocol.Judgement{TargetSec: 0.3}
	out, run := benchSearch(t, crowdedEndpoint(t, 5, false), "--cameras", "1,2,4,8", "--search=16", "--target", "0.3")
	order, passed := levels(run, j)
	if want := []string{"1", "2", "4", "8", "6*", "5*"}; !slices.Equal(order, want) {
		t.Errorf("levels measured %v, want %v", order, want)
	}
	if !passed[5] || passed[6] {
		t.Errorf("5 passed %v, 6 passed %v; want 5 to keep up and 6 not", passed[5], passed[6])
	}
	if got := summaryMaxCameras(t, out); got != "5" {
		t.Errorf("Max Cameras %q, want 5:\n%s", got, out)
	}
}

// An endpoint that refuses every request past 5 in flight: by the mean,
// as published, the refusals are left out and every level keeps up, up to
// the ceiling ("16+"); by p90 a refusal is an answer that never started,
// and the search finds 5.
func TestBenchSearchJudgedByTheStatistic(t *testing.T) {
	// Refusals above 5 at once decide the levels, not time: a target far
	// above the answers' 60 ms holds on a loaded machine.
	srv := crowdedEndpoint(t, 5, true)
	out, run := benchSearch(t, srv, "--cameras", "1,2,4,8", "--search=16", "--target", "2")
	if order, _ := levels(run, protocol.Judgement{}); !slices.Equal(order, []string{"1", "2", "4", "8", "16*"}) {
		t.Errorf("by the mean: levels %v, want the ladder and 16", order)
	}
	if got := summaryMaxCameras(t, out); got != "16+" {
		t.Errorf("by the mean: Max Cameras %q, want 16+ (the ceiling kept up):\n%s", got, out)
	}

	out, run = benchSearch(t, srv, "--cameras", "1,2,4,8", "--search=16", "--target", "2", "--statistic", "p90")
	if order, _ := levels(run, protocol.Judgement{}); !slices.Equal(order, []string{"1", "2", "4", "8", "6*", "5*"}) {
		t.Errorf("by p90: levels %v, want the ladder, 6 and 5", order)
	}
	if got := summaryMaxCameras(t, out); got != "5" {
		t.Errorf("by p90: Max Cameras %q, want 5:\n%s", got, out)
	}
	if c := run.Combinations[4]; c.Tail == nil || c.Tail.Due != 6 || c.Tail.Unstarted != 1 {
		t.Errorf("6 cameras: tail %+v, want 6 due and the refusal unstarted", c.Tail)
	}
	if !strings.Contains(out, "9 of 10 answers starting within 2 s") {
		t.Errorf("the summary does not say the judgement:\n%s", out)
	}
}
