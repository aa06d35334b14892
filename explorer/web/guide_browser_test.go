package web_test

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/vlmfleet/vlmfleet/explorer"
)

// guideText reads the guide's example sentences and the presets' state.
type guideText struct {
	Engine, MaxCams           string
	QuantLink, EngineLink     string
	QuantHidden, EngineHidden bool
	CompareHidden, AGXHidden  bool
	CompareButtonPreset       string
}

const guideJS = `(() => { const q = (s) => document.querySelector(s); return {
	Engine: q('#guide-engine').textContent, MaxCams: q('#guide-maxcams').textContent,
	QuantLink: q('#preset-quant-link').textContent, EngineLink: q('#preset-engine-link').textContent,
	QuantHidden: q('#preset-quant-link').hidden, EngineHidden: q('#preset-engine-link').hidden,
	CompareHidden: q('#start-compare').hidden, AGXHidden: q('#start-agx').hidden,
	CompareButtonPreset: q('#start-compare button').dataset.preset }; })()`

// datasetOf is testDataset with only the rows whose id keep accepts.
func datasetOf(keep func(id string) bool, change func(*testRow)) explorer.Dataset {
	ds := explorer.Dataset{Schema: 1, Generated: testDate(100), Sizes: []string{"480p", "720p", "1080p", "2K"}}
	for i, tr := range testRows() {
		if !keep(tr.id) {
			continue
		}
		if change != nil {
			change(&tr)
		}
		r := buildRow(i, tr)
		if r.Simulated {
			ds.SimulatedRows++
		}
		ds.Rows = append(ds.Rows, r)
	}
	return ds
}

// With the seed's rows, the guide reads as the seed does.
func TestGuideQuotesTheSeedsRowsWhenShown(t *testing.T) {
	ctx := newTab(t)
	open(t, ctx, serve(t, mustJSON(t, testDataset())))
	g := eval[guideText](t, ctx, guideJS)
	if want := "Qwen3-VL-4B-Instruct on RTX PRO 6000 at 720p starts answering a single camera after 0.25 s under llama.cpp (Q8_0) and 0.16 s under vLLM (BF16); at 16 cameras the gap is 1.09 s against 0.46 s."; g.Engine != want {
		t.Errorf("engine sentence %q, want the seed's %q", g.Engine, want)
	}
	if want := "It depends on your target and moves with it: at 720p with one image per camera, Cosmos3-Edge on Jetson AGX Orin keeps up with 2 cameras at 1 second and 8 — the highest number measured, so 8+ — at 3 seconds."; g.MaxCams != want {
		t.Errorf("Max Cameras sentence %q, want the seed's %q", g.MaxCams, want)
	}
	if g.QuantHidden || g.EngineHidden || g.CompareHidden || g.AGXHidden {
		t.Errorf("presets hidden though their rows exist: %+v", g)
	}
	if g.QuantLink != "Qwen3-VL-8B-Instruct at Q4_K_M and Q8_0 on Jetson AGX Orin" {
		t.Errorf("quantization link %q", g.QuantLink)
	}
}

// Without the seed's rows (the demo has no 8B model, no Cosmos3-Edge that
// moves with the target), a preset without rows disappears, a link names the
// rows it selects, and every figure the guide quotes is on the page or said
// to be the published seed's.
func TestGuideQuotesOnlyFiguresOnThePage(t *testing.T) {
	ctx := newTab(t)
	// No Qwen3-VL-8B, no Cosmos3-Edge; the RTX pair has other figures.
	ds := datasetOf(func(id string) bool { return !strings.HasPrefix(id, "q8b-") && id != "edge-agx" }, func(tr *testRow) {
		switch tr.id {
		case "q4b-llama-rtx":
			tr.ttft720 = []float64{0.31, 0.42, 0.6, 0.9, 1.71}
		case "q4b-vllm-rtx":
			tr.ttft720 = []float64{0.2, 0.23, 0.3, 0.41, 1.5}
		}
	})
	open(t, ctx, serve(t, mustJSON(t, ds)))
	g := eval[guideText](t, ctx, guideJS)
	if !g.QuantHidden || g.EngineHidden || g.CompareHidden || g.CompareButtonPreset != "engine" {
		t.Errorf("no quantization pair: its link must go, the engine link stay and the button show the engines: %+v", g)
	}
	if !g.AGXHidden {
		t.Error(`"How many cameras can one Jetson AGX Orin watch?" is offered with no AGX Orin row`)
	}
	want := "Qwen3-VL-4B-Instruct on RTX PRO 6000 at 720p starts answering a single camera after 0.31 s under llama.cpp (Q8_0) and 0.20 s under vLLM (BF16); at 16 cameras the gap is 1.71 s against 1.50 s."
	if g.Engine != want {
		t.Errorf("engine sentence %q, want the figures of this table %q", g.Engine, want)
	}
	// The one-camera figures quoted are the ones the table shows.
	rows := shownRows(t, ctx)
	for id, rt := range map[string]string{"q4b-llama-rtx": "0.31", "q4b-vllm-rtx": "0.20"} {
		if got := rowByID(t, rows, id).RT; got != rt {
			t.Errorf("%s shows %q, the guide quotes %q", id, got, rt)
		}
	}
	// The row that moves with the target here is the llama.cpp one: 0.90 s
	// at 8 cameras, 1.71 s at 16.
	if want := "It depends on your target and moves with it: at 720p with one image per camera, Qwen3-VL-4B-Instruct on RTX PRO 6000 keeps up with 8 cameras at 1 second and 16 — the highest number measured, so 16+ — at 3 seconds."; g.MaxCams != want {
		t.Errorf("Max Cameras sentence %q, want %q", g.MaxCams, want)
	}
	// Nothing else in the guide quotes seconds that are not on the page.
	shown := map[string]bool{}
	for _, r := range rows {
		shown[r.RT] = true
	}
	for _, m := range regexp.MustCompile(`\d+\.\d\d s`).FindAllString(g.Engine, -1) {
		if v := strings.TrimSuffix(m, " s"); !shown[v] && !slices.Contains([]string{"1.71", "1.50"}, v) {
			t.Errorf("the guide quotes %s, which no row shows", m)
		}
	}
	click(t, ctx, `a.preset[data-preset="engine"]`)
	if got := ids(shownRows(t, ctx)); !slices.Equal(got, []string{"q4b-llama-rtx", "q4b-vllm-rtx"}) {
		t.Errorf("engine preset: %v", got)
	}
}

// With none of the rows the examples need, the guide says that its figures
// are the published seed's, and the presets that need those rows go.
func TestGuideSaysWhenAFigureIsTheSeeds(t *testing.T) {
	ctx := newTab(t)
	open(t, ctx, serve(t, mustJSON(t, datasetOf(func(id string) bool { return strings.HasSuffix(id, "-nx") }, nil))))
	g := eval[guideText](t, ctx, guideJS)
	for what, s := range map[string]string{"engine": g.Engine, "Max Cameras": g.MaxCams} {
		if !strings.Contains(s, "in the published seed") && !strings.Contains(s, "In the published seed") || !strings.Contains(s, "not in this table") {
			t.Errorf("%s sentence %q: want it called the published seed's", what, s)
		}
	}
	if !g.CompareHidden || !g.AGXHidden {
		t.Errorf("presets without rows are offered: %+v", g)
	}
}
