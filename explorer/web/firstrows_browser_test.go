package web_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/rs/zerolog"

	"github.com/vlmfleet/vlmfleet/explorer"
	"github.com/vlmfleet/vlmfleet/protocol"
)

type seedRuns []protocol.Run

func (s seedRuns) Runs(context.Context) ([]protocol.Run, error) { return s, nil }

func loadSeedRuns(t *testing.T) seedRuns {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "testdata", "seed_runs.json"))
	if err != nil {
		t.Fatal(err)
	}
	var runs seedRuns
	if err := json.Unmarshal(raw, &runs); err != nil {
		t.Fatal(err)
	}
	return runs
}

// heldExplorer serves the explorer over runs, its whole dataset held back
// until release is called; broken answers it with something that is not
// a dataset.
func heldExplorer(t *testing.T, runs seedRuns, broken bool) (url string, release func()) {
	t.Helper()
	ex := explorer.NewHandler(runs, zerolog.New(io.Discard))
	held := make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/explorer/data", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-held:
		case <-r.Context().Done():
			return
		}
		if broken {
			// A 200 the page cannot read: an error status would be logged
			// to the console, which every browser test forbids.
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"rows": "none"}`)
			return
		}
		ex.ServeHTTP(w, r)
	})
	mux.Handle("/", ex)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	var once bool
	release = func() {
		if !once {
			once = true
			close(held)
		}
	}
	t.Cleanup(release)
	return srv.URL, release
}

// tableRow is a row of the table as the reader sees it.
type tableRow struct {
	ID    string   `json:"id"`
	Class string   `json:"class"`
	Cells []string `json:"cells"`
	Why   string   `json:"why"`
	Title string   `json:"title"`
	Badge string   `json:"badge"`
	// MaxTitle says what makes a searched Max Cameras exact.
	MaxTitle string `json:"maxTitle"`
	// DeviceTitle says a row's power setting is part of it.
	DeviceTitle string `json:"deviceTitle"`
}

const tableRowsJS = `[...document.querySelectorAll('#tbody tr.row')].map((tr) => {
  const why = tr.querySelector('.why');
  const badge = tr.querySelector('.badge-sim');
  return { id: tr.dataset.id, class: tr.className, cells: [...tr.children].map((td) => td.textContent),
    why: why && !why.hidden ? why.textContent : '', title: tr.querySelector('.c-rt').title || '', badge: badge ? badge.title : '',
    maxTitle: tr.querySelector('.c-max').title || '', deviceTitle: tr.children[4].title || '' };
})`

// served opens url with its data held back and returns the table's rows as
// the server wrote them (the explorer has not started: it has no data).
func served(t *testing.T, ctx context.Context, url string) []tableRow {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.readyState !== 'loading'`, chromedp.WithPollingTimeout(15*time.Second))); err != nil {
		t.Fatalf("the page was not parsed: %v", err)
	}
	if eval[bool](t, ctx, `document.documentElement.dataset.ready === 'true'`) {
		t.Fatal("the explorer started without its data")
	}
	return eval[[]tableRow](t, ctx, tableRowsJS)
}

// explorerRows releases the data, waits for the explorer and returns its rows.
func explorerRows(t *testing.T, ctx context.Context, release func()) []tableRow {
	t.Helper()
	release()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.documentElement.dataset.ready === 'true'`, chromedp.WithPollingTimeout(15*time.Second))); err != nil {
		t.Fatalf("the explorer did not start once the data came: %v", err)
	}
	return eval[[]tableRow](t, ctx, tableRowsJS)
}

// sameRows holds the server's rows to the explorer's first ones, word for word.
func sameRows(t *testing.T, server, js []tableRow) {
	t.Helper()
	if len(js) < len(server) {
		t.Fatalf("the explorer shows %d rows, fewer than the server's %d", len(js), len(server))
	}
	for i, s := range server {
		j := js[i]
		if s.ID != j.ID || s.Class != j.Class || s.Why != j.Why || s.Title != j.Title || s.Badge != j.Badge || s.MaxTitle != j.MaxTitle || s.DeviceTitle != j.DeviceTitle || len(s.Cells) != len(j.Cells) {
			t.Errorf("row %d: the server wrote %+v, the explorer %+v", i, s, j)
			continue
		}
		for c := range s.Cells {
			if s.Cells[c] != j.Cells[c] {
				t.Errorf("row %d (%s) cell %d: the server wrote %q, the explorer %q", i, s.ID, c, s.Cells[c], j.Cells[c])
			}
		}
	}
}

// The served page carries the first rows of its default view, the rows
// API's first page, before the whole dataset has arrived, and they read
// as the explorer's own rows do once it starts: the seed's rows word for
// word.
func TestServedPageShowsFirstRowsBeforeTheData(t *testing.T) {
	url, release := heldExplorer(t, loadSeedRuns(t), false)
	var want explorer.RowsResponse
	resp, err := http.Get(url + explorer.PathRows + "?limit=50")
	if err != nil {
		t.Fatal(err)
	}
	err = json.NewDecoder(resp.Body).Decode(&want)
	resp.Body.Close()
	if err != nil || len(want.Rows) == 0 {
		t.Fatalf("the rows API: %d rows, %v", len(want.Rows), err)
	}

	ctx := newTab(t)
	first := served(t, ctx, url)
	if len(first) != len(want.Rows) {
		t.Fatalf("%d rows in the served page, want the rows API's %d", len(first), len(want.Rows))
	}
	for i, r := range want.Rows {
		if first[i].ID != r.ID {
			t.Fatalf("served row %d is %s, want %s (%s)", i, first[i].ID, r.ID, r.Model)
		}
	}
	sameRows(t, first, explorerRows(t, ctx, release))
}

// Rows whose figures fall on a rounding tie (12.25 tok/s, 0.125 s, 2.45B,
// 12.5B), a row where every request failed and a simulated row: the
// server writes them as the explorer's JavaScript does.
func TestServedRowsMatchTheExplorersFormats(t *testing.T) {
	run := func(id, model string, params float64, ttft, tps float64, completed, failed int) protocol.Run {
		r := protocol.Run{
			ID: id, Status: protocol.RunCompleted, Source: protocol.SourceLab,
			Config:     protocol.Configuration{Model: model, ParamsB: params, Quantization: "Q8_0", Engine: "llama.cpp", Device: "Jetson AGX Orin"},
			Workload:   protocol.Workload{MaxTokens: 128},
			Engine:     protocol.EngineInfo{Kind: "llamacpp", Name: "llama.cpp", Version: "b1"},
			CreatedAt:  time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC),
			FinishedAt: time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC),
		}
		for _, cams := range []int{1, 2} {
			c := protocol.Combination{ComboKey: protocol.ComboKey{Size: "720p", Images: 1, Cameras: cams}, Completed: completed, Failed: failed}
			if completed > 0 {
				c.TTFT = protocol.Stats{N: completed, Mean: ttft * float64(cams), P90: ttft * float64(cams)}
				c.TPS = protocol.Stats{N: completed, Mean: tps}
			} else {
				c.Errors = []protocol.ErrorCount{{Error: `HTTP 400: <image> "too large"`, Count: failed}}
			}
			r.Combinations = append(r.Combinations, c)
		}
		return r
	}
	sim := run("sim", "Sim-<b>VL</b>", 12.5, 1.005, 9.95, 8, 0)
	sim.Simulated = true
	powered := run("powered", "Tie-VL", 2.45, 0.2, 12.25, 8, 0)
	powered.Config.PowerMode = "15W"
	runs := seedRuns{
		powered,
		run("ties", "Tie-VL", 2.45, 0.125, 12.25, 8, 0),
		run("under", "Under-VL", 1.45, 1.455, 0.05, 8, 0),
		run("failed", "Failed-VL", 26.4, 0, 0, 0, 8),
		run("one", "One-VL", 8, 2.995, 310.35, 1, 0),
		sim,
	}
	url, release := heldExplorer(t, runs, false)
	ctx := newTab(t)
	first := served(t, ctx, url)
	if len(first) != len(runs) {
		t.Fatalf("%d rows in the served page, want %d: %+v", len(first), len(runs), first)
	}
	if !slices.ContainsFunc(first, func(r tableRow) bool {
		return len(r.Cells) > 4 && r.Cells[4] == "Jetson AGX Orin · 15W" && r.DeviceTitle != ""
	}) {
		t.Errorf("no served row shows the device with its power setting 15W: %+v", first)
	}
	sameRows(t, first, explorerRows(t, ctx, release))
}

// A searched, paced row, a ladder and a row with means only: the server
// writes the exact figure and its title as the explorer does.
func TestServedRowsMatchForSearchedAndPacedRuns(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "testdata", "buyer_runs.json"))
	if err != nil {
		t.Fatal(err)
	}
	var runs seedRuns
	if err := json.Unmarshal(raw, &runs); err != nil {
		t.Fatal(err)
	}
	url, release := heldExplorer(t, runs, false)
	ctx := newTab(t)
	first := served(t, ctx, url)
	if len(first) != len(runs) || !slices.ContainsFunc(first, func(r tableRow) bool { return strings.HasPrefix(r.MaxTitle, "Exact:") }) {
		t.Fatalf("served rows %+v, want %d with the searched row's exact figure", first, len(runs))
	}
	sameRows(t, first, explorerRows(t, ctx, release))
}

// No script is needed to see the first rows: with JavaScript off the
// served page still shows them.
func TestServedRowsNeedNoScript(t *testing.T) {
	url, _ := heldExplorer(t, loadSeedRuns(t), false)
	ctx := newTab(t)
	if _, err := chromedp.Call(ctx, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true}); err != nil {
		t.Fatalf("turn scripts off: %v", err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
		t.Fatal(err)
	}
	n, err := chromedp.Run(ctx, chromedp.Poll[int](`document.readyState !== 'loading' && document.querySelectorAll('#tbody tr.row').length`, chromedp.WithPollingTimeout(15*time.Second)))
	if err != nil || n == 0 {
		t.Fatalf("no rows with scripts off: %d (%v)", n, err)
	}
	if ready := eval[bool](t, ctx, `document.documentElement.dataset.ready === 'true'`); ready {
		t.Fatal("the explorer ran with scripts off")
	}
}

// When the dataset cannot be loaded, the page says so and the served rows
// go: without the data nothing in the table could be filtered, sorted or
// opened.
func TestFailedDataClearsTheServedRows(t *testing.T) {
	url, release := heldExplorer(t, loadSeedRuns(t), true)
	ctx := newTab(t)
	if first := served(t, ctx, url); len(first) == 0 {
		t.Fatal("no served rows before the data failed")
	}
	release()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`!!(window.vlmfleetExplorer && window.vlmfleetExplorer.error)`, chromedp.WithPollingTimeout(15*time.Second))); err != nil {
		t.Fatalf("the page did not report the failed data: %v", err)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll('#tbody tr').length`); n != 0 {
		t.Errorf("%d rows left in the table without data", n)
	}
	if msg := eval[string](t, ctx, `(() => { const b = document.getElementById('load-error'); return b.hidden ? '' : b.textContent; })()`); msg == "" {
		t.Error("the error box is hidden")
	}
}

// A link to another view (a sort, a filter) does not show the default
// view's rows while its data loads: the page clears them at once.
func TestHashViewDropsTheServedRows(t *testing.T) {
	url, release := heldExplorer(t, loadSeedRuns(t), false)
	ctx := newTab(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(url+"/#size=1080p")); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.readyState !== 'loading' && document.querySelectorAll('#tbody tr').length === 0`, chromedp.WithPollingTimeout(15*time.Second))); err != nil {
		t.Fatalf("the default view's rows stayed under a link to 1080p: %v", err)
	}
	if rows := explorerRows(t, ctx, release); len(rows) == 0 || eval[string](t, ctx, `window.vlmfleetExplorer.state().size`) != "1080p" {
		t.Errorf("the explorer shows %d rows at %s", len(rows), eval[string](t, ctx, `window.vlmfleetExplorer.state().size`))
	}
}
