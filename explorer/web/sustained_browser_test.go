package web_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/vlmfleet/vlmfleet/explorer"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// sustainedDataset is the test dataset with two searched rows at 720p, one
// image: Cosmos3-Edge, whose ladder keeps up with 8 cameras as one round
// and whose search measured 8 (fails), 4, 6 (keep up) and 7 (fails)
// sustained; and the vLLM row, searched in rounds at 32 (keeps up) and 33
// (fails).
func sustainedDataset() explorer.Dataset {
	ds := testDataset()
	level := func(cams int, ttft float64, load string) explorer.Point {
		return explorer.Point{Size: "720p", Images: 1, Cameras: cams, TTFT: ttft, TTFTP90: ttft * 1.1,
			TPS: 40, Completed: 3 * cams, Throughput: 40 * float64(cams), Search: true, Load: load}
	}
	for i, r := range ds.Rows {
		switch r.ID {
		case "edge-agx":
			r.Points = append(r.Points, level(8, 3.65, protocol.LoadSustained), level(4, 2.25, protocol.LoadSustained),
				level(6, 2.95, protocol.LoadSustained), level(7, 3.3, protocol.LoadSustained))
		case "q4b-vllm-rtx":
			r.Points = append(r.Points, level(32, 2.9, ""), level(33, 3.1, ""))
		default:
			continue
		}
		r.Explanation = explorer.Explain(r)
		ds.Rows[i] = r
	}
	return ds
}

// The page says beside each Max Cameras a search chose whether it was
// read from cameras that kept sending or from one round per level, as
// published; a row with sustained levels answers from them alone, and its
// expanded measurements name each level's load.
func TestPageSaysWhichLoadMaxCamerasWasReadFrom(t *testing.T) {
	ctx := newTab(t)
	open(t, ctx, serve(t, mustJSON(t, sustainedDataset())))
	rows := shownRows(t, ctx)
	edge, vllm := rowByID(t, rows, "edge-agx"), rowByID(t, rows, "q4b-vllm-rtx")
	if edge.Max != "6" || vllm.Max != "32" {
		t.Errorf("Max Cameras %q and %q, want 6 (sustained; 8 kept up as one round) and 32", edge.Max, vllm.Max)
	}
	title := func(id string) string {
		return eval[string](t, ctx, `document.querySelector('#tbody tr[data-id="`+id+`"] .c-max').title`)
	}
	if got := title("edge-agx"); got != "Exact: a search measured 7 cameras too, which did not keep up; sustained, cameras that keep sending" {
		t.Errorf("the sustained answer's title %q", got)
	}
	if got := title("q4b-vllm-rtx"); got != "Exact: a search measured 33 cameras too, which did not keep up; one round per level, as published" {
		t.Errorf("the rounds' answer's title %q", got)
	}
	levels := func() []string {
		return eval[[]string](t, ctx, `[...document.querySelectorAll('#tbody tr.detail .d-measure tbody th')].map(th => th.textContent)`)
	}
	click(t, ctx, `#tbody tr[data-id="edge-agx"] .toggle`)
	want := []string{"1 one round, as published", "2 one round, as published", "4 one round, as published", "4 (search) sustained",
		"6 (search) sustained", "7 (search) sustained", "8 one round, as published", "8 (search) sustained"}
	if got := levels(); !slices.Equal(got, want) {
		t.Errorf("the sustained row's levels say\n%q\nwant\n%q", got, want)
	}
	click(t, ctx, `#tbody tr[data-id="edge-agx"] .toggle`)
	click(t, ctx, `#tbody tr[data-id="q4b-vllm-rtx"] .toggle`)
	for _, l := range levels() {
		if strings.Contains(l, "sustained") || strings.Contains(l, "as published") {
			t.Errorf("a row measured in rounds alone names its loads: %q", l)
		}
	}
}
