package main

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// queueEndpoint serves "fake-vlm" as an engine that takes prompts one
// after another: a request's first token comes base + per × (the other
// requests in flight when it arrived) after it. The tests use 240 ms +
// 70 ms, the 1.2 s + 0.35 s scaled down five times, judged
// against 0.61 s instead of 3 s: the ratios decide the answers. A mean
// passes when it rounds to at most 0.61 s, so the levels that must pass
// (0.59 s) keep 25 ms for the client's own delays, five times what a
// loaded two-core machine was seen to add; the levels that must fail
// (0.625 s and above) lie 10 ms above what rounds to it, which the client's
// delays only widen.
//
// Burst: camera i of a round waits for i others, mean base + per·(n−1)/2
// (8 cameras 0.485 s, 11 0.59 s, 12 0.625 s). Sustained: every camera
// finds the n−1 others in flight, base + per·(n−1) (6 cameras 0.59 s, 7
// 0.66 s, 8 0.73 s).
func queueEndpoint(t *testing.T, base, per time.Duration) *httptest.Server {
	t.Helper()
	var inFlight atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !isChat(w, r) {
			return
		}
		others := inFlight.Add(1) - 1
		defer inFlight.Add(-1)
		streamAnswer(w, r, base+time.Duration(others)*per)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// benchQueue benches srv's 480p ladder of 4, 8 and 16 cameras with the
// default requests per level and warm-up, searching at a 0.61 s target,
// with the flags given.
func benchQueue(t *testing.T, srv *httptest.Server, flags ...string) (string, *protocol.Run) {
	t.Helper()
	jsonPath := filepath.Join(t.TempDir(), "run.json")
	args := append([]string{"bench", "--url", srv.URL + "/v1", "--model", "fake-vlm", "--sizes", "480p", "--multi-sizes", "none",
		"--cameras", "4,8,16", "--search", "--target", "0.61", "--max-tokens", "8", "--image-dir", snapshotDir(t), "--json", jsonPath}, flags...)
	code, out, errOut := runCLI(t, args...)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	return out, readRun(t, jsonPath)
}

// queueShape is the endpoint, scaled (queueEndpoint).
func queueShape(t *testing.T) *httptest.Server {
	return queueEndpoint(t, 240*time.Millisecond, 70*time.Millisecond)
}

// loadLevel is the run's level of cams cameras back to back under the
// load given (sustained or not).
func loadLevel(run *protocol.Run, cams int, sustained bool) (protocol.Combination, bool) {
	for _, c := range run.Combinations {
		if !c.Paced() && c.Cameras == cams && c.Sustained() == sustained {
			return c, true
		}
	}
	return protocol.Combination{}, false
}

// levelLine is a 480p level's line of bench's table: its cameras, whether
// a search chose it, and what it says of its load.
var levelLine = regexp.MustCompile(`(?m)^480p +1 +(\d+) +\d+ +\d+ +[\d.]+s +[\d.]+s .*?(  \(search\))?  (sustained: \d+ rounds in a [\d.]+ s window|one round, as published)$`)

// tableLoads is what each level line of out says of its load, as
// "8*: sustained: 3 rounds in a 2.1 s window" (* where a search chose
// the level); it fails the test where a level line says none.
func tableLoads(t *testing.T, out string, run *protocol.Run) []string {
	t.Helper()
	var loads []string
	for _, m := range levelLine.FindAllStringSubmatch(out, -1) {
		mark := ""
		if m[2] != "" {
			mark = "*"
		}
		loads = append(loads, m[1]+mark+": "+m[3])
	}
	if len(loads) != len(run.Combinations) {
		t.Errorf("%d level lines say their load, want one for each of the %d levels:\n%s", len(loads), len(run.Combinations), out)
	}
	return loads
}

// On an engine that takes prompts one after another, the ladder's 8
// cameras keep up as one round (0.485 s) but not sustained (0.73 s):
// the search measures 8 again sustained, goes down, and answers 6 (7
// measured sustained and failing), each probe with at least three
// measured requests per camera. The ladder stays one round, as
// published, and the record says which load each level had.
// About 30 s on a loaded machine: a sustained probe runs six requests per
// camera, one after another.
func TestBenchSearchAnswersSustained(t *testing.T) {
	j := protocol.Judgement{TargetSec: 0.61}
	out, run := benchQueue(t, queueShape(t))
	t.Log(out)
	if got := summaryMaxCameras(t, out); got != "6" {
		t.Errorf("Max Cameras %q, want 6:\n%s", got, out)
	}
	if !strings.Contains(out, "480p   6    (sustained)") {
		t.Errorf("the summary does not say that Max Cameras is sustained:\n%s", out)
	}
	if burst8, ok := loadLevel(run, 8, false); !ok || burst8.Search || !j.Passes(burst8.Figures()) {
		t.Errorf("the ladder's 8 cameras as one round: %+v, want measured and passing", burst8.ComboKey)
	}
	for cams, pass := range map[int]bool{8: false, 7: false, 6: true} {
		c, ok := loadLevel(run, cams, true)
		if !ok {
			t.Errorf("%d cameras were not measured sustained", cams)
			continue
		}
		if j.Passes(c.Figures()) != pass {
			t.Errorf("%d cameras sustained: mean %.3f s, want passing %v", cams, c.TTFT.Mean, pass)
		}
	}
	for _, l := range tableLoads(t, out, run) {
		if strings.Contains(l, "*") != strings.Contains(l, "sustained: ") {
			t.Errorf("bench's table says %q; want each ladder level one round, as published, and each probe sustained with its rounds and window", l)
		}
	}
	for _, c := range run.Combinations {
		if c.Search != c.Sustained() {
			t.Errorf("%s: search %v; want the ladder one round and every probe sustained", c.ComboKey, c.Search)
		}
		if !c.Sustained() {
			continue
		}
		perCamera := map[int]int{}
		for _, r := range c.Requests {
			perCamera[r.Camera]++
		}
		for cam := range c.Cameras {
			if perCamera[cam] < protocol.MinSustainedRounds {
				t.Errorf("%s: camera %d sent %d measured requests, want at least 3", c.ComboKey, cam, perCamera[cam])
			}
		}
		if c.Rounds < protocol.MinSustainedRounds || c.WindowSec <= 0 {
			t.Errorf("%s: rounds %d, window %.3f s; want the window recorded", c.ComboKey, c.Rounds, c.WindowSec)
		}
	}
}

// The same engine with every level one round (--load burst), as the
// search measured before: 11 cameras, said to be one round, as
// published, and recorded so.
func TestBenchSearchBurstLoadKeepsTheRoundsAnswer(t *testing.T) {
	out, run := benchQueue(t, queueShape(t), "--load", "burst")
	if got := summaryMaxCameras(t, out); got != "11" {
		t.Errorf("Max Cameras %q, want 11:\n%s", got, out)
	}
	if !strings.Contains(out, "480p   11   (one round, as published)") {
		t.Errorf("the summary does not say that Max Cameras is one round:\n%s", out)
	}
	for _, l := range tableLoads(t, out, run) {
		if !strings.HasSuffix(l, ": one round, as published") {
			t.Errorf("bench's table says %q under --load burst", l)
		}
	}
	if run.Workload.Load != protocol.LoadBurst {
		t.Errorf("the run's workload says load %q, want burst", run.Workload.Load)
	}
	for _, c := range run.Combinations {
		if c.Sustained() || c.Rounds != 0 {
			t.Errorf("%s: measured sustained under --load burst", c.ComboKey)
		}
	}
}
