package web_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/explorer"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// buyerDataset aggregates testdata/buyer_runs.json: a searched and paced
// row with warnings and an unmeasurable TPS, a ladder that tops out at 8+,
// and a row imported with its means only.
func buyerDataset(t *testing.T) explorer.Dataset {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "testdata", "buyer_runs.json"))
	if err != nil {
		t.Fatal(err)
	}
	var runs []protocol.Run
	if err := json.Unmarshal(raw, &runs); err != nil {
		t.Fatal(err)
	}
	return explorer.Aggregate(runs, time.Date(2026, 4, 2, 0, 0, 0, 0, time.UTC))
}

// rowIDs names the buyer dataset's rows by their run.
func rowIDs(ds explorer.Dataset) map[string]explorer.Row {
	out := map[string]explorer.Row{}
	for _, r := range ds.Rows {
		out[strings.TrimPrefix(r.Run.ID, "buyer-")] = r
	}
	return out
}

// buyerDetail is what the expanded row shows of the buyer's figures.
type buyerDetail struct {
	Heads, Cameras, TPS, Frames, Judged, Results, Explanation []string
	Sentence, Hint, Unknown, Meta                             string
}

const buyerDetailJS = `(() => {
	const d = document.querySelector('#tbody tr.detail');
	if (!d) return {};
	const texts = (sel) => [...d.querySelectorAll(sel)].map(e => e.textContent);
	const one = (sel) => { const e = d.querySelector(sel); return e ? e.textContent : ''; };
	return { Heads: texts('.d-measure thead th'), Cameras: texts('.d-measure tbody th'), TPS: texts('.d-measure tbody .c-tps'),
		Frames: texts('.d-measure tbody .c-frames'), Judged: texts('.d-measure tbody .c-judged'), Results: texts('.d-measure tbody .result'),
		Explanation: texts('.d-explain p:not(.hint)'),
		Sentence: one('.d-sentence'), Hint: one('.d-search-hint'), Unknown: one('.d-unknown'), Meta: one('.d-meta') };
})()`

// shownByModel reads the table's rows by model.
func shownByModel(t *testing.T, ctx context.Context) map[string]shownRow {
	t.Helper()
	out := map[string]shownRow{}
	for _, r := range shownRows(t, ctx) {
		out[r.Model] = r
	}
	return out
}

// The frame-clock and statistic controls change Max Cameras, the rows, the
// sentence in the expanded row (the same words as Go's), the URL and the CSV.
func TestPacingAndStatisticChangeMaxCamerasAndSentences(t *testing.T) {
	ds := buyerDataset(t)
	row := rowIDs(ds)
	ctx := newTab(t)
	open(t, ctx, serve(t, mustJSON(t, ds)))
	labels := func(box string) []string {
		return eval[[]string](t, ctx, `[...document.querySelectorAll('#`+box+` button')].map(b => b.textContent + (b.getAttribute('aria-pressed') === 'true' ? '*' : ''))`)
	}
	if got := labels("pacing-buttons"); !slices.Equal(got, []string{"Back to back*", "A frame every 2 s", "A frame every 5 s"}) || eval[bool](t, ctx, `document.querySelector('#pacing-field').hidden`) {
		t.Errorf("pacing control %v (hidden %v), want back to back pressed and each measured interval", got, eval[bool](t, ctx, `document.querySelector('#pacing-field').hidden`))
	}
	if got := labels("stat-buttons"); !slices.Equal(got, []string{"Mean*", "p90", "p95"}) {
		t.Errorf("statistic control %v", got)
	}
	rows := shownByModel(t, ctx)
	searched, ladder, published := rows["Qwen3-VL-4B-Instruct"], rows["Cosmos-Reason2-2B"], rows["Gemma-4-E4B-it"]
	if searched.Max != "23" || ladder.Max != "8+" || published.Max != "2" {
		t.Errorf("by the mean: Max %q %q %q, want 23 (the search's), 8+ and 2", searched.Max, ladder.Max, published.Max)
	}
	if title := eval[string](t, ctx, `document.querySelector('#tbody tr[data-id="`+searched.ID+`"] .c-max').title`); !strings.HasPrefix(title, "Exact: a search measured 24 cameras too") {
		t.Errorf("the exact figure's title %q", title)
	}
	click(t, ctx, `#tbody tr[data-id="`+searched.ID+`"] .toggle`)

	click(t, ctx, `#stat-buttons button[data-value="p90"]`)
	rows = shownByModel(t, ctx)
	if r := rows["Qwen3-VL-4B-Instruct"]; r.Max != "16" || r.RT != "0.20" {
		t.Errorf("by p90: searched row Max %q RT %q, want 16 and its p90 0.20", r.Max, r.RT)
	}
	if r := rows["Gemma-4-E4B-it"]; r.Max != "n/a" || r.Result != "n/a" || r.RT != "n/a" || !strings.Contains(r.Class, "nodata") {
		t.Errorf("by p90, the published row: %+v, want n/a neither PASS nor FAIL", r)
	}
	if why := eval[string](t, ctx, `document.querySelector('#tbody tr[data-id="`+published.ID+`"] .why').textContent`); why != "p90 n/a: published with means only" {
		t.Errorf("the published row says %q", why)
	}
	if h := eval[string](t, ctx, `document.querySelector('#rt-head').textContent`); h != "Response time p90 (s)" {
		t.Errorf("response-time header %q", h)
	}
	d := eval[buyerDetail](t, ctx, buyerDetailJS)
	// At 720p the explanation itself judges by p90, in Go's words.
	if want := explorer.JudgedSentence(row["searched"].Points, "720p", 1, 0, protocol.Judgement{Statistic: "p90", TargetSec: 3}); !slices.Contains(d.Explanation, want) || want == "" || d.Sentence != "" {
		t.Errorf("by p90 the explanation is %q (and the sentence %q), want Go's %q in the explanation", d.Explanation, d.Sentence, want)
	}
	if !slices.Contains(d.Heads, "p90, all due (s)") || d.Judged[0] != "0.20" {
		t.Errorf("by p90 the measurements have %v, judged %v", d.Heads, d.Judged)
	}
	chartTitle := `Chart.getChart(document.querySelector('#tbody tr.detail canvas')).options.plugins.title.text[1]`
	if title := eval[string](t, ctx, chartTitle); title != "Response time (p90) as cameras are added" {
		t.Errorf("chart title %q", title)
	}
	// The published row, opened by p90, says why it is not judged.
	click(t, ctx, `#tbody tr[data-id="`+published.ID+`"] .toggle`)
	if d := eval[buyerDetail](t, ctx, buyerDetailJS); !strings.HasPrefix(d.Unknown, "p90 n/a: published with means only.") || !slices.Equal(d.Results, []string{"n/a", "n/a", "n/a"}) {
		t.Errorf("the published row by p90: %q, results %v", d.Unknown, d.Results)
	}
	click(t, ctx, `#tbody tr[data-id="`+searched.ID+`"] .toggle`)

	click(t, ctx, `#pacing-buttons button[data-value="5"]`)
	rows = shownByModel(t, ctx)
	if len(rows) != 1 || rows["Qwen3-VL-4B-Instruct"].Max != "8" {
		t.Errorf("every 5 s by p90: %+v, want only the paced row, Max 8", rows)
	}
	if c := eval[string](t, ctx, `document.querySelector('#count').textContent`); !strings.Contains(c, "2 not measured at 720p with 1 camera every 5 s") {
		t.Errorf("count %q", c)
	}
	click(t, ctx, `#stat-buttons button[data-value="mean"]`)
	if r := shownByModel(t, ctx)["Qwen3-VL-4B-Instruct"]; r.Max != "10" {
		t.Errorf("every 5 s by the mean: Max %q, want 10 (11 dropped a frame)", r.Max)
	}
	d = eval[buyerDetail](t, ctx, buyerDetailJS)
	// The page's sentence at this view is the explanation's paced line, word for word.
	if want := row["searched"].Explanation[4]; d.Sentence != want {
		t.Errorf("every 5 s the sentence is %q, want the explanation's %q", d.Sentence, want)
	}
	if title := eval[string](t, ctx, chartTitle); title != "Response time as cameras are added, one frame every 5 s per camera" {
		t.Errorf("chart title every 5 s by the mean: %q", title)
	}
	if !slices.Contains(d.Frames, "24 / 15 / 9") || !slices.Contains(d.Frames, "24 / 24 / 0") || !slices.Contains(d.Cameras, "11 (search)") {
		t.Errorf("every 5 s the measurements show frames %v at cameras %v", d.Frames, d.Cameras)
	}
	if h := eval[string](t, ctx, `location.hash`); !strings.Contains(h, "every=5") || strings.Contains(h, "stat=") {
		t.Errorf("hash %q, want every=5 and the default statistic left out", h)
	}
	recs, err := csv.NewReader(bytes.NewReader(downloadBytes(t, ctx, "#csv"))).ReadAll()
	if err != nil || len(recs) != 2 {
		t.Fatalf("CSV: %v, %q", err, recs)
	}
	if got := recs[1][14:19]; !slices.Equal(got, []string{"5", "mean", "yes", "24", "0"}) || recs[1][12] != "10" {
		t.Errorf("CSV line %q, want Max 10 and 5, mean, yes, 24, 0 in columns 15-19", recs[1])
	}
}

// The expanded row shows the levels a search chose, an unmeasurable TPS as
// n/a, the run's warnings, and on a ladder's "8+" the search that would
// make it exact.
func TestExpandedRowShowsSearchTPSWarningsAndHint(t *testing.T) {
	ds := buyerDataset(t)
	row := rowIDs(ds)
	ctx := newTab(t)
	open(t, ctx, serve(t, mustJSON(t, ds)))
	click(t, ctx, `#tbody tr[data-id="`+row["searched"].ID+`"] .toggle`)
	d := eval[buyerDetail](t, ctx, buyerDetailJS)
	if want := []string{"1", "2", "4", "8", "16", "20 (search)", "22 (search)", "23 (search)", "24 (search)", "32 (search)"}; !slices.Equal(d.Cameras, want) {
		t.Errorf("cameras %v, want %v", d.Cameras, want)
	}
	if len(d.TPS) < 3 || d.TPS[2] != "n/a" || d.TPS[1] == "n/a" {
		t.Errorf("TPS %v, want n/a at 4 cameras only", d.TPS)
	}
	for _, w := range []string{"Warnings", "prompts served from a cache: 12 of 40 requests", "fewer server slots (8) than cameras (16)"} {
		if !strings.Contains(d.Meta, w) {
			t.Errorf("run details lack %q: %s", w, d.Meta)
		}
	}
	if d.Hint != "" || d.Sentence != "" || len(d.Frames) != 0 {
		t.Errorf("the default view of a searched row: hint %q sentence %q frames %v, want none", d.Hint, d.Sentence, d.Frames)
	}
	click(t, ctx, `#camera-buttons button[data-value="4"]`)
	if r := shownByModel(t, ctx)["Qwen3-VL-4B-Instruct"]; r.TPS != "n/a" || r.Result != "PASS" {
		t.Errorf("4 cameras: TPS %q result %q, want n/a PASS", r.TPS, r.Result)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll('#camera-buttons button').length`); n != 5 {
		t.Errorf("%d camera buttons, want the ladder's 5 (a search's levels are not selectors)", n)
	}
	click(t, ctx, `#tbody tr[data-id="`+row["ladder"].ID+`"] .toggle`)
	d = eval[buyerDetail](t, ctx, buyerDetailJS)
	if want := "8+ means the highest number measured still kept up. A search would give the exact figure: vlmfleet sweep --search, or search: 64 in the workload."; d.Hint != want {
		t.Errorf("ladder row hint %q, want %q", d.Hint, want)
	}
	if !slices.Equal(d.Results, []string{"PASS", "PASS", "PASS", "PASS"}) {
		t.Errorf("ladder row results %v: the failed requests at 4 cameras are left out of the mean", d.Results)
	}
}

// The page's sentence at any view is Go's, word for word: every row of the
// buyer's and the test datasets, at every frame clock, statistic and a
// range of targets.
func TestJudgedSentenceInStepWithGo(t *testing.T) {
	type view struct {
		Points    []explorer.Point `json:"points"`
		Size      string           `json:"size"`
		Images    int              `json:"images"`
		Interval  float64          `json:"interval"`
		Statistic string           `json:"statistic"`
		Target    float64          `json:"target"`
	}
	var views []view
	var want []string
	rows := append(buyerDataset(t).Rows, testDataset().Rows...)
	for _, r := range rows {
		for _, every := range []float64{0, 2, 5, 10} {
			for _, stat := range []string{"mean", "p90", "p95"} {
				for _, target := range []float64{0.1, 0.3, 1, 2.5, 3, 100} {
					for _, images := range []int{1, 5} {
						views = append(views, view{r.Points, "720p", images, every, stat, target})
						want = append(want, explorer.JudgedSentence(r.Points, "720p", images, every, protocol.Judgement{Statistic: stat, TargetSec: target}))
					}
				}
			}
		}
	}
	ctx := newTab(t)
	open(t, ctx, serve(t, mustJSON(t, testDataset())))
	got := eval[[]string](t, ctx, `import('/static/logic.js').then(m => (`+string(mustJSON(t, views))+`).map(v =>
		m.judgedSentence(v.points, v.size, v.images, v.interval, v.statistic, v.target)))`)
	if len(got) != len(want) {
		t.Fatalf("%d sentences from JS, %d from Go", len(got), len(want))
	}
	kinds := map[string]bool{}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("%s every %g s by %s at %g s:\n  JS %q\n  Go %q", rows[i/144].Model, views[i].Interval, views[i].Statistic, views[i].Target, got[i], want[i])
		}
		for _, k := range []string{"not even one", "at least", "also measured", "cannot be judged", "every frame answered", "one camera at a time", "9 of 10", "19 of 20"} {
			if strings.Contains(want[i], k) {
				kinds[k] = true
			}
		}
	}
	if len(kinds) != 8 {
		t.Errorf("the views cover only the sentences with %v", kinds)
	}
}
