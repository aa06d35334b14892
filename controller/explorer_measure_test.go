package controller

import (
	"cmp"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/rs/zerolog"

	"github.com/vlmfleet/vlmfleet/controller/store"
	"github.com/vlmfleet/vlmfleet/explorer"
	"github.com/vlmfleet/vlmfleet/internal/testutil/browsertest"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// largeStoreDevices are the devices a large lab's runs are spread over;
// with the seed's 38 configurations and two quantizations of each they
// make 1,824 configurations (explorer rows).
var largeStoreDevices = []string{
	"Jetson AGX Orin", "Jetson AGX Orin 32GB", "Jetson Orin NX", "Jetson Orin NX 8GB", "Jetson Orin Nano",
	"Jetson AGX Thor", "Jetson AGX Xavier", "Jetson Xavier NX", "IGX Orin", "Jetson Orin Nano Super",
	"Jetson AGX Orin Industrial", "Jetson T5000",
	"RTX PRO 6000", "RTX PRO 6000 Max-Q", "RTX 4090", "RTX 5090", "L40S", "L4",
	"H100 PCIe", "H200", "A100 80GB", "A10G", "RTX 6000 Ada", "DGX Spark",
}

// largeStoreRuns makes runs of the seed's shape adding up to about combos
// combinations: each a full sweep of the default workload (24
// combinations, with every request record), under one of the seed's
// configurations on one of largeStoreDevices, dated over eleven months;
// one run in 17 failed halfway and one in 53 was cancelled; on the small
// devices the 2K five-image combination failed outright, as a real engine
// refuses a prompt over its context. Runs of one configuration repeat once
// the configurations are used up, so a larger store has more rows and more
// earlier runs (and regression markers) per row.
func largeStoreRuns(t testing.TB, combos int) []store.ImportEntry {
	t.Helper()
	raw, err := os.ReadFile("../explorer/testdata/seed_runs.json")
	if err != nil {
		t.Fatal(err)
	}
	var seed []protocol.Run
	if err := json.Unmarshal(raw, &seed); err != nil {
		t.Fatal(err)
	}
	w := protocol.DefaultWorkload()
	plan := w.Plan()
	n := (combos + len(plan) - 1) / len(plan)
	configs := len(seed) * len(largeStoreDevices) * 2
	start := time.Date(2026, 1, 5, 8, 0, 0, 0, time.UTC)
	step := 330 * 24 * time.Hour / time.Duration(n)
	out := make([]store.ImportEntry, 0, n)
	for i := range n {
		base := seed[i%len(seed)]
		k := i % configs
		device := largeStoreDevices[(k/len(seed))%len(largeStoreDevices)]
		jetson := strings.HasPrefix(device, "Jetson") || strings.HasPrefix(device, "IGX")
		r := base
		r.ID = fmt.Sprintf("large-%06d", i)
		r.Source = protocol.SourceLab
		r.Config.Device = device
		r.Device = protocol.DeviceFacts{Name: device, Kind: protocol.DeviceDGPU}
		if jetson {
			r.Device.Kind = protocol.DeviceJetson
			r.Device.Jetson = &protocol.JetsonFacts{Model: "NVIDIA " + device, L4T: "36.4.3", JetPack: "6.2", PowerMode: "MAXN"}
		}
		if k >= configs/2 {
			r.Config.Quantization = "FP8"
		}
		r.Workload = w
		r.Engine.Version = fmt.Sprintf("b%d", 6000+i%300)
		r.Engine.Command = []string{"llama-server", "-m", "/models/" + r.Config.Model + ".gguf", "--port", "8080", "-c", "8192"}
		r.CreatedAt = start.Add(time.Duration(i) * step)
		r.StartedAt = r.CreatedAt
		r.FinishedAt = r.CreatedAt.Add(40 * time.Minute)
		r.Status = protocol.RunCompleted
		r.Combinations = nil
		// The seed's response time at 720p with one camera, worse on a small
		// device, a little different at each run (so that some runs are
		// worse than the one before).
		ttft := 0.5
		for _, c := range base.Combinations {
			if c.Size == "720p" && c.Images == 1 && c.Cameras == 1 && c.Completed > 0 {
				ttft = c.TTFT.Mean
			}
		}
		ttft *= 1 + float64(k%len(largeStoreDevices))/12
		ttft *= 1 + 0.08*math.Sin(float64(i))
		todo := plan
		switch {
		case i%17 == 16:
			r.Status, r.Error = protocol.RunFailed, "engine exited with status 137 during 1080p-1img-4cam"
			todo = plan[:len(plan)/2]
		case i%53 == 52:
			r.Status, r.Error = protocol.RunCancelled, "cancelled by a user"
			todo = plan[:len(plan)/3]
		}
		for _, p := range todo {
			r.Combinations = append(r.Combinations, largeStoreCombo(p, ttft, jetson && !strings.Contains(device, "Thor")))
		}
		out = append(out, store.ImportEntry{Origin: "large-store", Run: r})
	}
	return out
}

// largeStoreCombo is one measured combination with its request records:
// response time grows with the pixels, the images and the cameras.
func largeStoreCombo(p protocol.PlannedCombo, ttft720 float64, small bool) protocol.Combination {
	size, _ := protocol.LookupImageSize(p.Size)
	pixels := float64(size.Width*size.Height) / (1280 * 720)
	ttft := ttft720 * (0.6 + 0.4*pixels) * (1 + 0.6*float64(p.Images-1)) * (1 + 0.45*float64(p.Cameras-1))
	tps := 28 / (1 + 0.12*float64(p.Cameras-1))
	c := protocol.Combination{ComboKey: p.ComboKey, Width: size.Width, Height: size.Height, Warmup: 1, MaxInFlight: p.Cameras}
	if small && p.Size == "2K" && p.Images == 5 {
		c.Failed = p.Requests
		msg := "HTTP 400: the request (9120 tokens) exceeds the available context size (8192 tokens)"
		c.Errors = []protocol.ErrorCount{{Error: msg, Count: p.Requests}}
		for k := range p.Requests {
			c.Requests = append(c.Requests, protocol.RequestRecord{Camera: 0, Seq: k, Start: float64(k) * 0.2, TTFB: 0.05, E2E: 0.05, Images: p.Images, Error: msg})
		}
		return c
	}
	var sum float64
	for k := range p.Requests {
		f := ttft * (0.9 + 0.2*float64(k%5)/4)
		e2e := f + 128/tps
		sum += f
		c.Requests = append(c.Requests, protocol.RequestRecord{
			Camera: k % p.Cameras, Seq: k / p.Cameras, Start: float64(k/p.Cameras) * e2e,
			TTFB: f * 0.4, TTFT: f, LastToken: e2e, E2E: e2e, CompletionTokens: 128, PromptTokens: 300 + 780*p.Images,
			TPS: tps, ITL: 1 / tps, Images: p.Images, FinishReason: "length", DecodeTokens: 127,
		})
	}
	c.Completed = p.Requests
	mean := sum / float64(p.Requests)
	c.TTFT = protocol.Stats{N: p.Requests, Mean: mean, P50: mean, P90: ttft * 1.08, P99: ttft * 1.1, Min: ttft * 0.9, Max: ttft * 1.1}
	c.TPS = protocol.Stats{N: p.Requests, Mean: tps, P50: tps, P90: tps, P99: tps, Min: tps, Max: tps}
	c.E2E = protocol.Stats{N: p.Requests, Mean: mean + 128/tps, P50: mean + 128/tps, P90: mean + 128/tps, P99: mean + 128/tps, Min: mean, Max: mean + 128/tps}
	c.CompletionTokens = protocol.Stats{N: p.Requests, Mean: 128, P50: 128, P90: 128, P99: 128, Min: 128, Max: 128}
	c.OutputTokensPerSec = tps * float64(p.Cameras)
	c.WallSec = float64(p.Requests/p.Cameras) * (mean + 128/tps)
	return c
}

// fillLargeStore imports runs of largeStoreRuns into c's store through
// ImportRuns, 100 runs to a transaction, and returns how many
// combinations it stored.
func fillLargeStore(t testing.TB, c *Controller, combos int) (runs, stored int) {
	t.Helper()
	entries := largeStoreRuns(t, combos)
	for len(entries) > 0 {
		batch := entries[:min(100, len(entries))]
		entries = entries[len(batch):]
		if _, err := c.store.ImportRuns(batch); err != nil {
			t.Fatal(err)
		}
		for _, e := range batch {
			stored += len(e.Run.Combinations)
		}
		runs += len(batch)
	}
	return runs, stored
}

// timedExplorerGet is one GET with the controller's token, as a browser asks
// (accepting gzip): the time to the last byte, and the bytes on the wire
// and after decoding.
func timedExplorerGet(t testing.TB, c *Controller, path string) (time.Duration, int, int, int) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, c.HTTPURL()+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+c.APIToken())
	req.Header.Set("Accept-Encoding", "gzip")
	start := time.Now()
	resp, err := explorerMeasureClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	wire, plain := len(body), len(body)
	if resp.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(strings.NewReader(string(body)))
		if err != nil {
			t.Fatal(err)
		}
		n, err := io.Copy(io.Discard, zr)
		if err != nil {
			t.Fatal(err)
		}
		plain = int(n)
	}
	return took, resp.StatusCode, wire, plain
}

// explorerMeasureClient leaves the body as it came, so that the wire size is seen.
var explorerMeasureClient = &http.Client{Transport: &http.Transport{DisableCompression: true}}

func durationQuantile(ds []time.Duration, q float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[int(math.Ceil(q*float64(len(s))))-1]
}

func msText(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }

// TestMeasureExplorerAtScale times the explorer's API over HTTP on
// loopback and the page's first render in chromium, against a real
// controller whose store holds about 28,000 and 100,000 combinations
// (largeStoreRuns), for docs/benchmarks.md. It runs only when asked:
//
//	VLMFLEET_MEASURE=1 go test -count=1 -v -timeout 30m -run TestMeasureExplorerAtScale ./controller/
//
// VLMFLEET_MEASURE_COMBOS=28000,100000 picks the sizes and
// VLMFLEET_MEASURE_REQUESTS=200 the requests per endpoint and size.
func TestMeasureExplorerAtScale(t *testing.T) {
	if os.Getenv("VLMFLEET_MEASURE") == "" {
		t.Skip("a measurement for docs/benchmarks.md; set VLMFLEET_MEASURE=1 to run it")
	}
	sizes := []int{28000, 100000}
	if v := os.Getenv("VLMFLEET_MEASURE_COMBOS"); v != "" {
		sizes = nil
		for _, f := range strings.Split(v, ",") {
			var n int
			if _, err := fmt.Sscan(f, &n); err != nil || n < 1 {
				t.Fatalf("VLMFLEET_MEASURE_COMBOS: %q is not a number of combinations", f)
			}
			sizes = append(sizes, n)
		}
	}
	paths := []string{
		"/api/explorer/rows",
		"/api/explorer/rows?size=1080p&cameras=4&target=2",
		"/api/explorer/rows?size=720p&images=3&target=5",
		"/api/explorer/rows?limit=50",
		"/api/explorer/data",
	}
	requests := 200
	if v := os.Getenv("VLMFLEET_MEASURE_REQUESTS"); v != "" {
		if _, err := fmt.Sscan(v, &requests); err != nil || requests < 1 {
			t.Fatalf("VLMFLEET_MEASURE_REQUESTS: %q is not a number of requests", v)
		}
	}
	var report []string
	for _, combos := range sizes {
		c := startControllerWith(t, Options{DataDir: t.TempDir(),
			Explorer: func(runs RunSource) http.Handler { return explorer.NewHandler(runs, zerolog.Nop()) }})
		began := time.Now()
		runs, stored := fillLargeStore(t, c, combos)
		t.Logf("%d combinations in %d runs stored in %s", stored, runs, time.Since(began).Round(time.Millisecond))
		head := fmt.Sprintf("%d combinations (%d runs)", stored, runs)
		// The first request after a change reads and aggregates every run.
		first, code, _, _ := timedExplorerGet(t, c, paths[0])
		if code != http.StatusOK {
			t.Fatalf("GET %s: %d", paths[0], code)
		}
		report = append(report, fmt.Sprintf("%s | first request after a change | %s", head, msText(first)))
		// What the process holds once the explorer has built its aggregate
		// (the store's memory of decoded runs, the snapshot): the live heap
		// after a collection.
		runtime.GC()
		var mem runtime.MemStats
		runtime.ReadMemStats(&mem)
		report = append(report, fmt.Sprintf("%s | live heap after the first build | %d MiB", head, mem.HeapAlloc>>20))
		for _, path := range paths {
			var ds []time.Duration
			var wire, plain int
			for range requests {
				d, code, w, p := timedExplorerGet(t, c, path)
				if code != http.StatusOK {
					report = append(report, fmt.Sprintf("%s | %s | status %d", head, path, code))
					ds = nil
					break
				}
				ds, wire, plain = append(ds, d), w, p
			}
			if ds != nil {
				report = append(report, fmt.Sprintf("%s | %s | p50 %s, p99 %s | %d B on the wire (%d B JSON)", head, path, msText(durationQuantile(ds, 0.5)), msText(durationQuantile(ds, 0.99)), wire, plain))
			}
		}
		// A lab's results keep arriving: each moves the generation, and the
		// next request pays for it.
		extra := largeStoreRuns(t, combos+10*24)[runs:]
		var after []time.Duration
		for i := range 10 {
			if _, err := c.store.ImportRuns(extra[i : i+1]); err != nil {
				t.Fatal(err)
			}
			d, code, _, _ := timedExplorerGet(t, c, paths[0])
			if code != http.StatusOK {
				t.Fatalf("GET %s: %d", paths[0], code)
			}
			after = append(after, d)
		}
		report = append(report, fmt.Sprintf("%s | %s right after a new run | p50 %s, max %s (10 runs)", head, paths[0], msText(durationQuantile(after, 0.5)), msText(durationQuantile(after, 1))))
		report = append(report, fmt.Sprintf("%s | page: first render %s", head, firstRenders(t, c)))
		if err := c.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	}
	for _, l := range report {
		t.Log(l)
	}
}

// firstRenders opens the explorer in chromium seven times and reports when
// the table first showed rows, since the navigation's start: when the
// server-written rows were painted, read as the Element Timing API's
// renderTime of the first row's name (the server marks it
// elementtiming="first-row"): the paint that showed it, not only when it
// was in the DOM. Chromium drops that entry when the explorer has replaced
// the row before the paint was presented (a small store: its data comes
// at once); then the first contentful paint counts where it came after
// the parser had put the rows in the DOM (domInteractive), else the
// explorer's render (perf.sinceNavigationMs). With them: when the page's
// module started, when it had the data in hand and when the explorer's own
// table was done.
func firstRenders(t *testing.T, c *Controller) string {
	path, err := browsertest.Path()
	if err != nil {
		return "no chromium: " + err.Error()
	}
	ctx := browsertest.Open(t, path, 5*time.Minute)
	// The cookie first, then each navigation is the page alone.
	if err := chromedp.Do(ctx, chromedp.Navigate(c.HTTPURL()+"/login?token="+c.APIToken())); err != nil {
		t.Fatalf("log in: %v", err)
	}
	type perf struct {
		RowsPainted, FCP, Parsed, Module, Data, Render float64
	}
	// Element entries are only handed to an observer (buffered: the ones
	// before it too); none within 2 s means no row was painted.
	const read = `(async () => {
  const p = window.vlmfleetExplorer.perf;
  const painted = await new Promise((resolve) => {
    const po = new PerformanceObserver((list) => {
      const e = list.getEntries().find((e) => e.identifier === 'first-row');
      if (e) { po.disconnect(); resolve(e.renderTime || e.loadTime); }
    });
    po.observe({ type: 'element', buffered: true });
    setTimeout(() => { po.disconnect(); resolve(0); }, 2000);
  });
  const fcp = performance.getEntriesByName('first-contentful-paint')[0];
  return { RowsPainted: painted, FCP: fcp ? fcp.startTime : 0, Parsed: performance.getEntriesByType('navigation')[0].domInteractive, Module: p.moduleStartMs || 0, Data: p.dataLoadedMs || 0, Render: p.sinceNavigationMs };
})()`
	var ps []perf
	for range 7 {
		if err := chromedp.Do(ctx, chromedp.Navigate(c.HTTPURL()+"/")); err != nil {
			t.Fatalf("open the explorer: %v", err)
		}
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`!!(window.vlmfleetExplorer && window.vlmfleetExplorer.perf && window.vlmfleetExplorer.perf.sinceNavigationMs)`,
			chromedp.WithPollingInterval(10*time.Millisecond), chromedp.WithPollingTimeout(2*time.Minute))); err != nil {
			t.Fatalf("wait for the explorer's first render: %v", err)
		}
		p, err := chromedp.Run(ctx, chromedp.Evaluate[perf](read, chromedp.EvalAwaitPromise))
		if err != nil {
			t.Fatal(err)
		}
		rows, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('#tbody tr.row').length`))
		if err != nil || rows == 0 {
			t.Fatalf("the table shows %d rows (%v)", rows, err)
		}
		// The preloaded data is the data the page reads: asked for once.
		fetches, err := chromedp.Run(ctx, chromedp.Evaluate[int](`performance.getEntriesByType('resource').filter((e) => e.name.endsWith('/api/explorer/data')).length`))
		if err != nil || fetches != 1 {
			t.Errorf("the page asked for its data %d times (%v), want once", fetches, err)
		}
		ps = append(ps, p)
	}
	shown := func(p perf) float64 {
		switch {
		case p.RowsPainted > 0 && p.RowsPainted < p.Render:
			return p.RowsPainted
		case p.FCP > 0 && p.FCP >= p.Parsed && p.FCP < p.Render:
			return p.FCP
		}
		return p.Render
	}
	slices.SortFunc(ps, func(a, b perf) int { return cmp.Compare(shown(a), shown(b)) })
	m := ps[len(ps)/2]
	return fmt.Sprintf("median %.0f ms (server's rows painted at %.0f ms, first contentful paint %.0f ms, rows parsed at %.0f ms, module started at %.0f ms, data in hand at %.0f ms, explorer's table at %.0f ms), min %.0f ms, max %.0f ms (7 loads)",
		shown(m), m.RowsPainted, m.FCP, m.Parsed, m.Module, m.Data, m.Render, shown(ps[0]), shown(ps[len(ps)-1]))
}
