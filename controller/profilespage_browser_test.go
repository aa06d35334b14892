package controller

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/rs/zerolog"

	"github.com/vlmfleet/vlmfleet/controller/store"
	"github.com/vlmfleet/vlmfleet/explorer"
	"github.com/vlmfleet/vlmfleet/explorer/web"
	"github.com/vlmfleet/vlmfleet/internal/testutil/browsertest"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// profileCombo is a profile level of ISL 1000, OSL 1000 on a 1120x1120
// png at concurrency conc. Its key names a camera size, which is all
// this build's validation of a stored combination takes; the lines read
// the level's own resolution.
func profileCombo(conc int, ttftMs, itlMs, reqPerSec float64, maxTput bool) protocol.Combination {
	latency := ttftMs + itlMs*1000
	return protocol.Combination{
		ComboKey: protocol.ComboKey{Size: "1120x1120", Images: 1, Cameras: conc, ISL: 1000, OSL: 1000},
		Width:    1120, Height: 1120, Completed: 4 * conc,
		Profile: &protocol.ProfileLevel{
			LengthPair: protocol.LengthPair{ISL: 1000, OSL: 1000}, Resolution: protocol.Resolution{Width: 1120, Height: 1120},
			ImageFormat: protocol.ImageFormatPNG, Concurrency: conc, Stream: true, ImageTokens: 1601, PromptTokens: 2601,
			TTFTMs: &ttftMs, ITLMs: &itlMs, RequestLatencyMs: latency, RequestThroughput: reqPerSec,
			OutputTokensPerSec: reqPerSec * 1000, OSLHeld: true, OSLMean: 1000, MaxThroughput: maxTput,
		},
	}
}

// importProfileRun stores a completed, simulated profile run of
// Llama-3.2-11B-Vision-Instruct on one H100-HBM3-80GB at FP8, TP1: 10 %
// slower than the published Min Latency line (TTFT 198, ITL 7.4, latency
// 7598 ms), 10 % less throughput than the published 2.72 req/s.
func importProfileRun(t *testing.T, c *Controller) {
	t.Helper()
	r := testRun("profile-sim-1", "a1")
	r.Status, r.FinishedAt = protocol.RunCompleted, r.CreatedAt.Add(time.Minute)
	r.Config = protocol.Configuration{Model: "Llama-3.2-11B-Vision-Instruct", Quantization: "FP8", Engine: "vLLM",
		Device: "H100 host", GPU: "H100-HBM3-80GB", GPUCount: 1, TP: 1}
	r.Combinations = []protocol.Combination{
		profileCombo(1, 217.8, 8.14, 0.12, false),
		profileCombo(8, 300, 29, 2.448, true),
	}
	if _, err := c.store.ImportRuns([]store.ImportEntry{{Origin: "test", Run: r}}); err != nil {
		t.Fatal(err)
	}
}

// The latency and throughput page shows the published tables with a
// measured line beside its published one, its difference and SIMULATED;
// its filters are in the URL, which reopens the same view; its CSV is the
// lines shown; it fits a phone and a laptop.
func TestProfilesPageShowsMeasuredBesidePublished(t *testing.T) {
	path := chromium(t)
	c := startControllerWith(t, Options{DataDir: t.TempDir(),
		Explorer: func(runs RunSource) http.Handler { return explorer.NewHandler(runs, zerolog.Nop(), web.WithLab()) }})
	importProfileRun(t, c)
	ctx := browsertest.Open(t, path, 2*time.Minute)
	openProfiles(t, ctx, c.HTTPURL()+"/profiles")

	checkMeasuredBesidePublished(t, ctx)
	if got := evalIn[string](t, ctx, `document.getElementById("rule").textContent`); got != protocol.ProfileAutoRule {
		t.Errorf("the page's rule %q, want %q", got, protocol.ProfileAutoRule)
	}
	if got := evalIn[string](t, ctx, `document.querySelector(".rules").textContent`); !strings.Contains(got, "ISL = text tokens; the image's tokens are not counted") {
		t.Errorf("the page does not say what ISL is: %q", got)
	}

	// Filters write the URL; the URL reopens them.
	evalIn[bool](t, ctx, `(() => { for (const [id, v] of [["f-model", "Llama-3.2-11B-Vision-Instruct"], ["f-precision", "FP8"], ["f-source", "measured"]]) {
		const s = document.getElementById(id); s.value = v; s.dispatchEvent(new Event("change")); } return true; })()`)
	want := "?model=Llama-3.2-11B-Vision-Instruct&precision=FP8&source=measured"
	if got := evalIn[string](t, ctx, `location.search`); got != want {
		t.Fatalf("the URL after filtering: %q, want %q", got, want)
	}
	filtered := shownLines(t, ctx)
	if len(filtered) != 2 || filtered[0] != "measured" || filtered[1] != "measured" {
		t.Errorf("lines shown filtered to measured: %q, want the run's two measured lines", filtered)
	}
	csv := evalIn[string](t, ctx, `decodeURIComponent(document.getElementById("csv").getAttribute("href").replace(/^data:text\/csv;charset=utf-8,/, ""))`)
	checkProfilesCSV(t, csv)

	openProfiles(t, ctx, c.HTTPURL()+"/profiles"+want)
	type view struct{ Model, GPU, Precision, Source string }
	got := evalIn[view](t, ctx, `({Model: document.getElementById("f-model").value, GPU: document.getElementById("f-gpu").value,
		Precision: document.getElementById("f-precision").value, Source: document.getElementById("f-source").value})`)
	if got != (view{Model: "Llama-3.2-11B-Vision-Instruct", Precision: "FP8", Source: "measured"}) {
		t.Errorf("the reopened URL's filters: %+v", got)
	}
	if again := shownLines(t, ctx); len(again) != len(filtered) {
		t.Errorf("the reopened URL shows %d lines, the view it was copied from %d", len(again), len(filtered))
	}
	checkProfilesFit(t, ctx, c.HTTPURL()+"/profiles")
}

func evalIn[T any](t *testing.T, ctx context.Context, js string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("%.80s: %v", js, err)
	}
	return v
}

func openProfiles(t *testing.T, ctx context.Context, u string) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.Navigate(u)); err != nil {
		t.Fatalf("open %s: %v", u, err)
	}
	ready := `!!(window.vlmfleetProfiles && window.vlmfleetProfiles.ready)`
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](ready, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		t.Fatalf("%s never got ready: %v", u, err)
	}
	if e := evalIn[string](t, ctx, `window.vlmfleetProfiles.error`); e != "" {
		t.Fatalf("%s: %s", u, e)
	}
}

// shownLines is the source of each figure row the page shows: published,
// measured or both.
func shownLines(t *testing.T, ctx context.Context) []string {
	t.Helper()
	return evalIn[[]string](t, ctx, `[...document.querySelectorAll("table.profile tbody tr")].map(tr =>
		[...new Set([...tr.querySelectorAll("td.fig")].filter(td => td.textContent !== "—").map(td => td.dataset.side === "pub" ? "published" : "measured"))].join("+"))`)
}

// checkMeasuredBesidePublished reads Llama-3.2-11B / H100-HBM3-80GB / FP8
// / TP1's two tables: published figures as the seed gives them, the
// measured ones beside them with their difference, marked SIMULATED.
func checkMeasuredBesidePublished(t *testing.T, ctx context.Context) {
	t.Helper()
	type cells struct {
		Published, Measured []string
		Marks               string
	}
	read := func(profile string) cells {
		return evalIn[cells](t, ctx, `(() => {
			const sec = [...document.querySelectorAll('section.model')].find(s => s.dataset.model === "Llama-3.2-11B-Vision-Instruct");
			const gpu = [...sec.querySelectorAll('section.gpu')].find(s => s.dataset.gpu === "H100-HBM3-80GB");
			const prec = [...gpu.querySelectorAll('section.precision')].find(s => s.dataset.precision === "FP8");
			const tp = prec.querySelector('section.tp[data-tp="1"]');
			const tr = tp.querySelector('table[data-profile="`+profile+`"] tbody tr');
			const text = side => [...tr.querySelectorAll('td.fig[data-side="' + side + '"]')].map(td => td.textContent);
			return {Published: text("pub"), Measured: text("meas"), Marks: tr.querySelector("td.marks").textContent};
		})()`)
	}
	minLat := read(protocol.ProfileMinLatency)
	if strings.Join(minLat.Published, " ") != "198 7.4 7598" {
		t.Errorf("published Min Latency: %q, want TTFT 198, ITL 7.4, latency 7598", minLat.Published)
	}
	if strings.Join(minLat.Measured, " | ") != "218 +10.0 % | 8.1 +10.0 % | 8358 +10.0 %" {
		t.Errorf("measured Min Latency: %q, want each 10 %% above the published", minLat.Measured)
	}
	if !strings.Contains(minLat.Marks, "SIMULATED") || !strings.Contains(minLat.Marks, "profile-sim-1") {
		t.Errorf("the measured line's marks %q, want SIMULATED and its run", minLat.Marks)
	}
	maxTput := read(protocol.ProfileMaxThroughput)
	if strings.Join(maxTput.Published, " ") != "— 29.3 2.72" || strings.Join(maxTput.Measured, " | ") != "8 | 29.0 -1.0 % | 2.45 -10.0 %" {
		t.Errorf("Max Throughput: published %q, measured %q", maxTput.Published, maxTput.Measured)
	}
}

// checkProfilesCSV reads the CSV of the two measured lines shown.
func checkProfilesCSV(t *testing.T, csv string) {
	t.Helper()
	lines := strings.Split(strings.TrimRight(csv, "\r\n"), "\r\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "model,gpu,gpu_count,precision,tp,engine,profile,isl,osl,width,height,image_format,concurrency,ttft_ms") {
		t.Fatalf("CSV:\n%s\nwant a header and the two lines shown", csv)
	}
	for _, want := range []string{
		"Llama-3.2-11B-Vision-Instruct,H100-HBM3-80GB,1,FP8,1,vLLM,min_latency,1000,1000,1120,1120,png,1,217.8,8.14,",
		",measured,true,run profile-sim-1; SIMULATED",
	} {
		if !strings.Contains(lines[1], want) {
			t.Errorf("CSV line %q lacks %q", lines[1], want)
		}
	}
	if !strings.Contains(lines[2], ",max_throughput,1000,1000,1120,1120,png,8,300,29,") {
		t.Errorf("CSV line %q, want the max throughput line at concurrency 8", lines[2])
	}
}

// checkProfilesFit opens u, every line shown, at 412 and 1280 px: the page
// never scrolls sideways; a table scrolls in its own box.
func checkProfilesFit(t *testing.T, ctx context.Context, u string) {
	t.Helper()
	for _, width := range []int64{412, 1280} {
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(width, 900)); err != nil {
			t.Fatal(err)
		}
		openProfiles(t, ctx, u)
		type fit struct{ Page, Window float64 }
		got := evalIn[fit](t, ctx, `({Page: document.documentElement.scrollWidth, Window: window.innerWidth})`)
		if got.Page > got.Window {
			t.Errorf("/profiles at %d px: the page is %.0f px wide, wider than the %.0f px window", width, got.Page, got.Window)
		}
	}
}
