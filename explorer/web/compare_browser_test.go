package web_test

import (
	"context"
	"math"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/rs/zerolog"

	"github.com/vlmfleet/vlmfleet/explorer"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// compareStore stands in for the controller's store: runs with their
// per-request records.
type compareStore []protocol.Run

func (s compareStore) Runs(context.Context) ([]protocol.Run, error) { return s, nil }

func (s compareStore) LoadRun(_ context.Context, id string) (protocol.Run, bool, error) {
	for _, r := range s {
		if r.ID == id {
			return r, true, nil
		}
	}
	return protocol.Run{}, false, nil
}

// comparedRun is a completed run on day of one configuration: 720p and
// 1080p at one camera, 16 requests each, TTFT around ttft720 at 720p.
func comparedRun(id string, day int, ttft720 float64) protocol.Run {
	r := protocol.Run{
		ID: id, Status: protocol.RunCompleted, Source: protocol.SourceLab,
		Config:     protocol.Configuration{Model: "Qwen3-VL-4B-Instruct", ParamsB: 4.4, Quantization: "Q8_0", Engine: "llama.cpp", Device: "Jetson AGX Orin"},
		Workload:   protocol.Workload{MaxTokens: 128},
		Engine:     protocol.EngineInfo{Kind: "llamacpp", Name: "llama.cpp", Version: "b" + string(rune('0'+day))},
		CreatedAt:  time.Date(2026, 11, 1+day, 9, 0, 0, 0, time.UTC),
		FinishedAt: time.Date(2026, 11, 1+day, 10, 0, 0, 0, time.UTC),
	}
	for _, size := range []string{"720p", "1080p"} {
		ttft := 0.4
		if size == "720p" {
			ttft = ttft720
		}
		c := protocol.Combination{ComboKey: protocol.ComboKey{Size: size, Images: 1, Cameras: 1}}
		for j := range 16 {
			f := 1 + 0.1*math.Sin(float64(j*7+day))
			c.Requests = append(c.Requests, protocol.RequestRecord{Seq: j, TTFT: ttft * f, E2E: 4 * f, TPS: 30 / f})
			c.Completed++
		}
		c.TTFT = protocol.Stats{N: 16, Mean: ttft, P50: ttft, P90: ttft}
		c.TPS = protocol.Stats{N: 16, Mean: 30}
		r.Combinations = append(r.Combinations, c)
	}
	return r
}

// serveExplorer serves the explorer (pages and API) over runs that carry
// their request records, as a controller does.
func serveExplorer(t *testing.T) string {
	t.Helper()
	before := comparedRun("before", 1, 0.25)
	after := comparedRun("after", 2, 0.40)
	other := comparedRun("q4", 3, 0.25)
	other.Config.Quantization = "Q4_K_M"
	srv := httptest.NewServer(explorer.NewHandler(compareStore{before, after, other}, zerolog.Nop()))
	t.Cleanup(srv.Close)
	return srv.URL
}

// waitCompare waits until the compare page has drawn its comparison or its
// error. A click that navigates replaces the page's context under a
// running evaluation, so this polls, with a deadline, across that.
func waitCompare(t *testing.T, ctx context.Context) {
	t.Helper()
	waitPage(t, ctx, `!!(window.vlmfleetCompare && (window.vlmfleetCompare.ready || window.vlmfleetCompare.error))`)
}

func waitPage(t *testing.T, ctx context.Context, js string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](js))
		if err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the page never got to %s (last error: %v)", js, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// From the explorer's row marker to the compare page: the slower 720p
// TTFT is worse, 1080p the same, and the page says B is worse.
func TestComparePageFromRowMarker(t *testing.T) {
	base := serveExplorer(t)
	ctx := newTab(t)
	open(t, ctx, base+"/?size=720p")
	marker := eval[string](t, ctx, `(() => { const a = document.querySelector('#tbody tr.row a.badge-worse'); return a ? a.textContent + '|' + a.getAttribute('href') : ''; })()`)
	if marker != "worse than 2026-11-02|/compare?a=before&b=after" {
		t.Fatalf("row marker %q, want the link to the comparison with the run of 2026-11-02", marker)
	}
	click(t, ctx, "#tbody tr.row a.badge-worse")
	waitCompare(t, ctx)
	if msg := eval[string](t, ctx, `window.vlmfleetCompare.error`); msg != "" {
		t.Fatalf("compare page: %s", msg)
	}
	got := eval[map[string]string](t, ctx, `(() => {
		const cell = (combo, metric) => document.querySelector('tr[data-combo="' + combo + '"] td[data-metric="' + metric + '"]');
		return {
			verdict: document.getElementById('verdict').textContent,
			ttft720: cell('720p/1/1', 'ttft_p50').dataset.verdict,
			ttft720text: cell('720p/1/1', 'ttft_p50').textContent,
			ttft1080: cell('1080p/1/1', 'ttft_p50').dataset.verdict,
			e2e720: cell('720p/1/1', 'e2e_p50').dataset.verdict,
			runs: document.getElementById('runs').textContent,
			config: document.getElementById('config').textContent,
		};
	})()`)
	for k, want := range map[string]string{"ttft720": "worse", "ttft1080": "same", "e2e720": "same"} {
		if got[k] != want {
			t.Errorf("%s: %q, want %q (%v)", k, got[k], want, got)
		}
	}
	for k, want := range map[string]string{"verdict": "B is worse than A in 2 figures", "ttft720text": "0.25 s → 0.39 s +58%", "runs": "b2", "config": "Qwen3-VL-4B-Instruct 4.4B Q8_0 · llama.cpp · Jetson AGX Orin"} {
		if !strings.Contains(got[k], want) {
			t.Errorf("%s: %q, want it to contain %q", k, got[k], want)
		}
	}
	shot := eval[string](t, ctx, `location.pathname + location.search`)
	if shot != "/compare?a=before&b=after" {
		t.Errorf("the marker led to %s", shot)
	}
	if png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)); err == nil {
		_ = os.WriteFile(filepath.Join(artifactDir(t), "compare.png"), png, 0o644)
	}
}

// Without ids the page is a form; submitting it compares.
func TestComparePageForm(t *testing.T) {
	base := serveExplorer(t)
	ctx := newTab(t)
	do(t, ctx, chromedp.Navigate(base+"/compare"))
	waitCompare(t, ctx)
	if shown := eval[bool](t, ctx, `!document.getElementById('result').hidden`); shown {
		t.Fatal("the result shows without ids")
	}
	setInput(t, ctx, "#in-a", "after")
	setInput(t, ctx, "#in-b", "before")
	click(t, ctx, "#pick button[type=submit]")
	waitPage(t, ctx, `location.search.includes('a=after') && !!(window.vlmfleetCompare && window.vlmfleetCompare.ready)`)
	if v := eval[string](t, ctx, `document.getElementById('verdict').textContent`); !strings.HasPrefix(v, "B is better than A") {
		t.Fatalf("after → before: %q, want better", v)
	}
}

// Two configurations are refused, and the page says which parts differ.
func TestComparePageRefusesOtherConfiguration(t *testing.T) {
	if shared.ctx == nil {
		newTab(t) // skips, or fails under CI
	}
	base := serveExplorer(t)
	// Not newTab: the browser logs the 409 answer to the console, as it should.
	tab, cancel := chromedp.NewContext(shared.ctx)
	defer cancel()
	ctx, cancelT := context.WithTimeout(tab, 30*time.Second)
	defer cancelT()
	do(t, ctx, chromedp.Navigate(base+"/compare?a=before&b=q4"))
	waitCompare(t, ctx)
	msg := eval[string](t, ctx, `document.getElementById('error').hidden ? '' : document.getElementById('error').textContent`)
	for _, want := range []string{"different configurations", `quantization: A is “Q8_0”, B is “Q4_K_M”`} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not say %q", msg, want)
		}
	}
	if eval[bool](t, ctx, `!document.getElementById('result').hidden`) {
		t.Error("a refused comparison still shows a result")
	}
}

// A paced level is set against the same level on the same frame clock and
// named with it; its dropped frames have a column (more is worse); a level
// a search chose is marked.
func TestComparePagePacedAndSearched(t *testing.T) {
	runs := compareStore{comparedRun("pa", 1, 0.25), comparedRun("pb", 2, 0.25)}
	for i := range runs {
		c := runs[i].Combinations[0]
		c.FrameIntervalSec = 5
		c.Pacing = &protocol.Pacing{FramesDue: 16 + 16*i, FramesSent: 16, FramesDropped: 16 * i}
		runs[i].Combinations = append(runs[i].Combinations, c)
	}
	runs[1].Combinations[1].Search = true
	srv := httptest.NewServer(explorer.NewHandler(runs, zerolog.Nop()))
	t.Cleanup(srv.Close)
	ctx := newTab(t)
	do(t, ctx, chromedp.Navigate(srv.URL+"/compare?a=pa&b=pb"))
	waitCompare(t, ctx)
	got := eval[map[string]string](t, ctx, `(() => {
		const row = (combo) => document.querySelector('tr[data-combo="' + combo + '"]');
		const cell = (combo, metric) => row(combo).querySelector('td[data-metric="' + metric + '"]');
		return {
			head: [...document.querySelectorAll('#changes-head th')].map(th => th.textContent).join('|'),
			paced: row('720p/1/1/every5').querySelector('th').textContent,
			dropped: cell('720p/1/1/every5', 'dropped').dataset.verdict + ' ' + cell('720p/1/1/every5', 'dropped').textContent,
			b2bCells: String(row('720p/1/1').querySelectorAll('td').length) + ' ' + (row('720p/1/1').querySelector('td[data-metric="dropped"]') ? 'dropped' : 'none'),
			searched: row('1080p/1/1').querySelector('th').textContent,
			verdict: document.getElementById('verdict').textContent,
		};
	})()`)
	for k, want := range map[string]string{
		"head":     "Combination|TTFT p50|TTFT p90|E2E p50|TPS p50|success rate|frames dropped",
		"paced":    "720p, 1 image, 1 camera, one frame every 5 s",
		"dropped":  "worse 0% → 50% +50 ptworse",
		"b2bCells": "6 none",
		"searched": "1080p, 1 image, 1 camera search",
		"verdict":  "B is worse than A in 1 figure.",
	} {
		if got[k] != want {
			t.Errorf("%s: %q, want %q", k, got[k], want)
		}
	}
}
