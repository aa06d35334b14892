package explorer

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// level is one measured combination of the buyer's fixture: its key, mean
// TTFT, the tail's p90, and what went wrong.
type level struct {
	size             string
	images, cameras  int
	every            float64
	mean, p90        float64
	failed, dropped  int
	search, noTail   bool
	tpsNotMeasurable bool
}

// combination makes l as an agent records it: 24 requests a level (one per
// camera above that), the tail over every answer due, a paced level's frames.
func (l level) combination() protocol.Combination {
	n := max(24, l.cameras) - l.failed - l.dropped
	if l.images > 1 {
		n = 5
	}
	c := protocol.Combination{
		ComboKey:  protocol.ComboKey{Size: l.size, Images: l.images, Cameras: l.cameras, FrameIntervalSec: l.every},
		Completed: n, Failed: l.failed, Search: l.search,
		TTFT:               protocol.Stats{N: n, Mean: l.mean, P50: l.mean, P90: l.p90, Min: l.mean / 2, Max: l.p90 * 1.1},
		TPS:                protocol.Stats{N: n, Mean: 150 / (1 + 0.05*float64(l.cameras)), P50: 150},
		OutputTokensPerSec: 150 * float64(l.cameras),
	}
	if l.failed > 0 {
		c.Errors = []protocol.ErrorCount{{Error: "HTTP 503: no free slot", Count: l.failed}}
	}
	if l.tpsNotMeasurable {
		c.TPS = protocol.Stats{}
	}
	if !l.noTail {
		due := n + l.failed + l.dropped
		c.Tail = &protocol.TTFTTail{Due: due, Unstarted: l.failed + l.dropped, P90: l.p90, P95: l.p90 * 1.05}
		if protocol.NearestRank(90, due) > n {
			c.Tail.P90 = 0
		}
		if protocol.NearestRank(95, due) > n {
			c.Tail.P95 = 0
		}
	}
	if l.every > 0 {
		c.Pacing = &protocol.Pacing{FramesDue: n + l.failed + l.dropped, FramesSent: n + l.failed, FramesDropped: l.dropped,
			Age: protocol.Stats{N: n, Mean: l.mean + 0.8}}
	}
	return c
}

// buyerRuns are the runs the explorer's buyer figures are tested on (and,
// through testdata/buyer_runs.json, the page's): one configuration searched
// and paced, one whose ladder tops out ("8+") with no search, and one
// imported with its means only.
func buyerRuns(t testing.TB) []protocol.Run {
	t.Helper()
	searched := []level{
		{size: "720p", images: 1, cameras: 1, mean: 0.16, p90: 0.2},
		{size: "720p", images: 1, cameras: 2, mean: 0.2, p90: 0.26},
		{size: "720p", images: 1, cameras: 4, mean: 0.26, p90: 0.34, tpsNotMeasurable: true},
		{size: "720p", images: 1, cameras: 8, mean: 0.33, p90: 0.45},
		{size: "720p", images: 1, cameras: 16, mean: 1.9, p90: 2.6},
		{size: "720p", images: 1, cameras: 32, mean: 3.4, p90: 4.1, search: true},
		{size: "720p", images: 1, cameras: 24, mean: 3.1, p90: 3.8, search: true},
		{size: "720p", images: 1, cameras: 20, mean: 2.6, p90: 3.2, search: true},
		{size: "720p", images: 1, cameras: 22, mean: 2.8, p90: 3.5, search: true},
		{size: "720p", images: 1, cameras: 23, mean: 2.95, p90: 3.6, search: true},
		{size: "720p", images: 1, cameras: 1, every: 2, mean: 0.16, p90: 0.2},
		{size: "720p", images: 1, cameras: 2, every: 2, mean: 0.2, p90: 0.27},
		{size: "720p", images: 1, cameras: 4, every: 2, mean: 0.9, p90: 1.4, dropped: 3},
		{size: "720p", images: 1, cameras: 1, every: 5, mean: 0.16, p90: 0.2},
		{size: "720p", images: 1, cameras: 2, every: 5, mean: 0.18, p90: 0.22},
		{size: "720p", images: 1, cameras: 4, every: 5, mean: 0.22, p90: 0.3},
		{size: "720p", images: 1, cameras: 8, every: 5, mean: 0.4, p90: 0.7},
		{size: "720p", images: 1, cameras: 16, every: 5, mean: 1.1, p90: 2.2, dropped: 9},
		{size: "720p", images: 1, cameras: 12, every: 5, mean: 0.9, p90: 1.7, dropped: 2, search: true},
		{size: "720p", images: 1, cameras: 10, every: 5, mean: 0.6, p90: 3.3, search: true},
		{size: "720p", images: 1, cameras: 11, every: 5, mean: 0.7, p90: 1.3, dropped: 1, search: true},
		{size: "720p", images: 5, cameras: 1, mean: 0.64, p90: 0.7},
		{size: "2K", images: 1, cameras: 1, mean: 0.56, p90: 0.6},
	}
	ladder := []level{
		{size: "720p", images: 1, cameras: 1, mean: 0.95, p90: 1.1},
		{size: "720p", images: 1, cameras: 2, mean: 1.3, p90: 1.6},
		{size: "720p", images: 1, cameras: 4, mean: 1.9, p90: 2.4, failed: 3},
		{size: "720p", images: 1, cameras: 8, mean: 2.7, p90: 3.3},
		{size: "720p", images: 5, cameras: 1, mean: 4.45, p90: 4.6},
		{size: "2K", images: 1, cameras: 1, mean: 7.07, p90: 7.3},
	}
	published := []level{
		{size: "720p", images: 1, cameras: 1, mean: 1.86, noTail: true},
		{size: "720p", images: 1, cameras: 2, mean: 2.5, noTail: true},
		{size: "720p", images: 1, cameras: 4, mean: 4.1, noTail: true},
		{size: "720p", images: 5, cameras: 1, mean: 8.32, noTail: true},
		{size: "1080p", images: 1, cameras: 1, mean: 4.45, noTail: true},
	}
	when := time.Date(2026, 4, 1, 9, 0, 0, 0, time.UTC)
	run := func(id, model, quant, engine, device string, params float64, levels []level) protocol.Run {
		w := protocol.DefaultWorkload()
		w.RequestsPerLevel = 24
		r := protocol.Run{
			Schema: protocol.SchemaVersion, ID: id, Source: protocol.SourceLab, Status: protocol.RunCompleted,
			Config:    protocol.Configuration{Model: model, ParamsB: params, Quantization: quant, Engine: engine, Device: device},
			Workload:  w,
			CreatedAt: when, StartedAt: when, FinishedAt: when.Add(time.Hour),
			Engine: protocol.EngineInfo{Kind: "vllm", Name: engine},
			Device: protocol.DeviceFacts{Name: device, Kind: protocol.DeviceDGPU},
		}
		for _, l := range levels {
			r.Combinations = append(r.Combinations, l.combination())
		}
		return r
	}
	a := run("buyer-searched", "Qwen3-VL-4B-Instruct", "BF16", "vLLM", "RTX PRO 6000", 4.4, searched)
	a.Workload.FrameIntervalSec, a.Workload.Search = []float64{2, 5}, protocol.DefaultSearchCeiling
	a.Workload.Judgement = protocol.Judgement{Statistic: protocol.StatisticMean}
	a.Warnings = []string{"prompts served from a cache: 12 of 40 requests", "fewer server slots (8) than cameras (16)"}
	b := run("buyer-ladder", "Cosmos-Reason2-2B", "Q8_0", "llama.cpp", "Jetson AGX Orin", 2.4, ladder)
	b.Workload.Cameras, b.Device.Kind = []int{1, 2, 4, 8}, protocol.DeviceJetson
	c := run("buyer-published", "Gemma-4-E4B-it", "Q4_0", "llama.cpp", "Jetson Orin NX", 8.0, published)
	c.Workload.Cameras, c.Device.Kind, c.Source = []int{1, 2, 4}, protocol.DeviceJetson, protocol.SourceImport
	runs := []protocol.Run{a, b, c}
	for i := range runs {
		if err := runs[i].Validate(); err != nil {
			t.Fatalf("%s: %v", runs[i].ID, err)
		}
	}
	return runs
}

// TestBuyerGolden keeps testdata/buyer_runs.json, which the page's browser
// tests aggregate, in step with buyerRuns.
func TestBuyerGolden(t *testing.T) {
	want, err := json.MarshalIndent(buyerRuns(t), "", " ")
	if err != nil {
		t.Fatal(err)
	}
	want = append(want, '\n')
	const path = "testdata/buyer_runs.json"
	if *update {
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("%s is out of date (%v): run go test ./explorer -run TestBuyerGolden -update", path, err)
	}
}

func buyerDataset(t *testing.T) map[string]Row {
	t.Helper()
	ds := Aggregate(buyerRuns(t), time.Date(2026, 4, 2, 0, 0, 0, 0, time.UTC))
	out := map[string]Row{}
	for _, r := range ds.Rows {
		out[r.Run.ID] = r
	}
	return out
}

func TestAggregateCarriesPacingSearchTailAndWarnings(t *testing.T) {
	rows := buyerDataset(t)
	a := rows["buyer-searched"]
	p, ok := FindPointAt(a.Points, "720p", 1, 16, 5)
	if !ok || p.FramesDue != 24 || p.FramesSent != 15 || p.FramesDropped != 9 || p.Tail == nil || p.Tail.Unstarted != 9 {
		t.Errorf("paced 16 cameras every 5 s: %+v (tail %+v), want 24 due, 15 sent, 9 dropped and unstarted", p, p.Tail)
	}
	if b2b, _ := FindPoint(a.Points, "720p", 1, 16); b2b.Paced() || b2b.TTFT != 1.9 {
		t.Errorf("back to back 16 cameras reads %+v, want the back-to-back level (1.9 s)", b2b)
	}
	if p, _ := FindPoint(a.Points, "720p", 1, 23); !p.Search {
		t.Errorf("23 cameras: search not carried: %+v", p)
	}
	if p, _ := FindPoint(a.Points, "720p", 1, 4); !p.TPSUnmeasured || p.TPS != 0 {
		t.Errorf("4 cameras with no measurable TPS: %+v, want tps_na", p)
	}
	if p, _ := FindPoint(a.Points, "720p", 1, 2); p.TPSUnmeasured {
		t.Errorf("2 cameras: TPS measured but marked n/a: %+v", p)
	}
	if !slices.Equal(a.Run.Warnings, []string{"prompts served from a cache: 12 of 40 requests", "fewer server slots (8) than cameras (16)"}) {
		t.Errorf("warnings %q", a.Run.Warnings)
	}
	if got := Intervals(a.Points); !slices.Equal(got, []float64{2, 5}) {
		t.Errorf("intervals %v, want [2 5]", got)
	}
	// Points are ordered back to back before paced within a size and image count.
	var keys []string
	for _, p := range a.Points {
		if p.Size == "720p" && p.Images == 1 {
			keys = append(keys, protocol.ComboKey{Size: p.Size, Images: 1, Cameras: p.Cameras, FrameIntervalSec: p.FrameIntervalSec}.String())
		}
	}
	if keys[0] != "720p-1img-1cam" || keys[9] != "720p-1img-32cam" || keys[10] != "720p-1img-1cam-every2s" || keys[len(keys)-1] != "720p-1img-16cam-every5s" {
		t.Errorf("point order %v", keys)
	}
}

func TestMaxCamerasJudgedByStatisticAndPacing(t *testing.T) {
	rows := buyerDataset(t)
	j := func(stat string, target float64) protocol.Judgement {
		return protocol.Judgement{Statistic: stat, TargetSec: target}
	}
	for _, c := range []struct {
		row, stat string
		every     float64
		target    float64
		want      string
		judgeable bool
	}{
		{"buyer-searched", "mean", 0, 3, "23", true},   // the search's exact figure
		{"buyer-searched", "p90", 0, 3, "16", true},    // 20's p90 is 3.2 s
		{"buyer-searched", "p95", 0, 3, "16", true},    // 16's p95 is 2.73 s
		{"buyer-searched", "mean", 0, 1, "8", true},    // the searched levels read at another target
		{"buyer-searched", "mean", 5, 3, "10", true},   // 11 dropped a frame
		{"buyer-searched", "p90", 5, 3, "8", true},     // 10's p90 is 3.3 s
		{"buyer-searched", "mean", 2, 3, "2", true},    // 4 dropped frames
		{"buyer-searched", "mean", 10, 3, "0", true},   // not measured at 10 s
		{"buyer-ladder", "mean", 0, 3, "8+", true},     // the failures at 4 are left out
		{"buyer-ladder", "p90", 0, 3, "2", true},       // 3 of 24 failed at 4: p90 never started
		{"buyer-published", "mean", 0, 3, "2", true},   // the published rule
		{"buyer-published", "p90", 0, 3, "0", false},   // no tail: not judged
		{"buyer-published", "p95", 0, 100, "0", false}, // not even at a lenient target
	} {
		pts := rows[c.row].Points
		max, plus := MaxCamerasJudged(pts, "720p", 1, c.every, j(c.stat, c.target))
		if got := MaxCamerasLabel(max, plus); got != c.want {
			t.Errorf("%s by %s every %g s at %g s: %s, want %s", c.row, c.stat, c.every, c.target, got, c.want)
		}
		if got := Judgeable(pts, "720p", 1, c.every, j(c.stat, c.target)); got != c.judgeable {
			t.Errorf("%s by %s: judgeable %v, want %v", c.row, c.stat, got, c.judgeable)
		}
	}
	if !Searched(rows["buyer-searched"].Points, "720p", 1, 5) || Searched(rows["buyer-ladder"].Points, "720p", 1, 0) {
		t.Error("Searched: want the searched row's paced levels searched and the ladder's not")
	}
}

func TestExplainSaysPacedAndSearchedAnswers(t *testing.T) {
	rows := buyerDataset(t)
	want := []string{
		"Qwen3-VL-4B-Instruct (4.4B parameters), served in BF16 format with vLLM on RTX PRO 6000, starts answering a single camera that sends one 720p image after 0.16 s, then writes confirm tok/s.",
		"With 5 images per camera at 720p, the answer starts after 0.64 s. With one 2K image, after 0.56 s.",
		"At the default target of an answer starting within 3 s (720p, one image per camera), it keeps up with 23 cameras at once; with 24, also measured, it does not.",
		"At one frame every 2 s per camera (720p, one image), it keeps up with 2 cameras: every frame answered, each answer starting within 3 s.",
		"At one frame every 5 s per camera (720p, one image), it keeps up with 10 cameras: every frame answered, each answer starting within 3 s; with 11, also measured, it does not.",
	}
	got := rows["buyer-searched"].Explanation
	want[0] = strings.Replace(want[0], "confirm", FormatTPS(150/1.05), 1)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("searched and paced row:\n got %q\nwant %q", got, want)
	}
	if got := rows["buyer-ladder"].Explanation[2]; got != "At the default target of an answer starting within 3 s (720p, one image per camera), it keeps up with at least 8 cameras at once: it still met the target at the highest number measured, so the real limit is higher." {
		t.Errorf("ladder row: %q", got)
	}
	pts := rows["buyer-searched"].Points
	for _, c := range []struct {
		every float64
		j     protocol.Judgement
		want  string
	}{
		{0, protocol.Judgement{Statistic: "p90", TargetSec: 3}, "At a target of 9 of 10 answers starting within 3 s (720p, one image per camera), it keeps up with 16 cameras at once."},
		{0, protocol.Judgement{Statistic: "p95", TargetSec: 0.3}, "At a target of 19 of 20 answers starting within 0.3 s (720p, one image per camera), it keeps up with 2 cameras at once."},
		{5, protocol.Judgement{Statistic: "p90", TargetSec: 3}, "At one frame every 5 s per camera (720p, one image), it keeps up with 8 cameras: every frame answered, 9 of 10 answers starting within 3 s."},
		{5, protocol.Judgement{Statistic: "mean", TargetSec: 0.1}, "At one frame every 5 s per camera (720p, one image), not even one camera has every frame answered, each answer starting within 0.1 s."},
	} {
		if got := JudgedSentence(pts, "720p", 1, c.every, c.j); got != c.want {
			t.Errorf("every %g s by %+v:\n got %q\nwant %q", c.every, c.j, got, c.want)
		}
	}
	if got := JudgedSentence(rows["buyer-published"].Points, "720p", 1, 0, protocol.Judgement{Statistic: "p90", TargetSec: 3}); got != "At a target of 9 of 10 answers starting within 3 s (720p, one image per camera), it cannot be judged by p90: the row was published with its means only, not its slow answers." {
		t.Errorf("published row by p90: %q", got)
	}
}

func TestSelectReadsTheJudgementAndTheFrameClock(t *testing.T) {
	ds := Aggregate(buyerRuns(t), time.Date(2026, 4, 2, 0, 0, 0, 0, time.UTC))
	view := func(q Query) map[string]RowView {
		if err := q.Normalize(); err != nil {
			t.Fatal(err)
		}
		out := map[string]RowView{}
		for _, v := range Select(ds, q).Rows {
			out[v.Model] = v
		}
		return out
	}
	q := DefaultQuery()
	def := view(q)
	if v := def["Qwen3-VL-4B-Instruct"]; v.MaxCamerasLabel != "23" || !v.Search || v.Plus || v.NotJudged || v.Judged != nil {
		t.Errorf("default view, searched row: %+v", v)
	}
	if v := def["Cosmos-Reason2-2B"]; v.MaxCamerasLabel != "8+" || v.Search {
		t.Errorf("default view, ladder row: %+v", v)
	}
	q.Statistic = "P90"
	p90 := view(q)
	if v := p90["Gemma-4-E4B-it"]; v.MaxCamerasLabel != "n/a" || !v.NotJudged || v.Pass || v.Judged != nil {
		t.Errorf("p90, published row: %+v, want n/a, neither pass nor fail", v)
	}
	if v := p90["Qwen3-VL-4B-Instruct"]; v.MaxCamerasLabel != "16" || !v.Pass || v.Judged == nil || *v.Judged != 0.2 {
		t.Errorf("p90, searched row: %+v", v)
	}
	q.Cameras, q.Interval = 16, 5
	paced := view(q)
	if len(paced) != 1 {
		t.Fatalf("every 5 s: %d rows, want only the paced one", len(paced))
	}
	if v := paced["Qwen3-VL-4B-Instruct"]; v.Pass || v.FramesDropped != 9 || v.FramesDue != 24 || v.MaxCamerasLabel != "8" || v.Judged != nil {
		t.Errorf("every 5 s at 16 cameras by p90: %+v, want FAIL with 9 of 24 dropped, Max 8, p90 never started", v)
	}
	q.Cameras, q.Statistic = 4, ""
	if v := view(q)["Qwen3-VL-4B-Instruct"]; !v.Pass || v.TPSUnmeasured {
		t.Errorf("every 5 s at 4 cameras: %+v", v)
	}
	q.Interval = 0
	if v := view(q)["Qwen3-VL-4B-Instruct"]; !v.TPSUnmeasured {
		t.Errorf("back to back at 4 cameras: TPS not measurable but %+v", v)
	}
}

func TestParseQueryFrameClockAndStatistic(t *testing.T) {
	q, err := ParseQuery(map[string][]string{"every": {"5"}, "statistic": {"P95"}})
	if err != nil || q.Interval != 5 || q.Statistic != "p95" {
		t.Errorf("every=5&statistic=P95: %+v, %v", q, err)
	}
	if back, err := ParseQuery(q.Values()); err != nil || back != q {
		t.Errorf("%+v sent as %q reads back as %+v, %v", q, q.Values().Encode(), back, err)
	}
	for _, bad := range []map[string][]string{
		{"every": {"-1"}}, {"every": {"NaN"}}, {"every": {"soon"}}, {"every": {"7200"}}, {"statistic": {"p99"}},
	} {
		if _, err := ParseQuery(bad); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
	if _, err := ParseQuery(map[string][]string{"bogus": {"1"}}); err == nil || !strings.Contains(err.Error(), "every") || !strings.Contains(err.Error(), "statistic") {
		t.Errorf("an unknown parameter's error names every and statistic: %v", err)
	}
}

func TestWriteTableSaysTheJudgementAndWhatIsNotKnown(t *testing.T) {
	ds := Aggregate(buyerRuns(t), time.Date(2026, 4, 2, 0, 0, 0, 0, time.UTC))
	q := DefaultQuery()
	q.Statistic, q.Cameras = "p90", 4
	var buf bytes.Buffer
	if err := WriteTable(&buf, Select(ds, q)); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{"TTFT P90", "Gemma-4-E4B-it (Q4_0, llama.cpp) on Jetson Orin NX: p90 n/a: published with means only",
		"judged by p90", "not started"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	q.Statistic, q.Interval, q.Cameras = "", 5, 16
	buf.Reset()
	if err := WriteTable(&buf, Select(ds, q)); err != nil {
		t.Fatal(err)
	}
	if out := buf.String(); !strings.Contains(out, "9 of 24 frames dropped") || !strings.Contains(out, "one frame every 5 s per camera") {
		t.Errorf("paced table:\n%s", out)
	}
}

func TestRunCSVCarriesTheBuyersColumns(t *testing.T) {
	run := buyerRuns(t)[0]
	var buf bytes.Buffer
	if err := WriteRunCSV(&buf, &run); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	head := recs[0]
	col := func(rec []string, name string) string {
		i := slices.Index(head, name)
		if i < 0 {
			t.Fatalf("no column %s in %q", name, head)
		}
		return rec[i]
	}
	if head[29] != "errors" {
		t.Errorf("the older columns moved: column 30 is %q", head[29])
	}
	byKey := map[string][]string{}
	for _, rec := range recs[1:] {
		byKey[col(rec, "size")+"/"+col(rec, "images")+"/"+col(rec, "cameras")+"/"+col(rec, "frame_interval_sec")] = rec
	}
	for key, want := range map[string][]string{
		// interval, search, due, sent, dropped, tail due, unstarted, p90, p95
		"720p/1/16/5": {"5", "false", "24", "15", "9", "24", "9", "", ""},
		"720p/1/23/0": {"0", "true", "", "", "", "24", "0", "3.6", "3.7800000000000002"},
		"720p/1/1/0":  {"0", "false", "", "", "", "24", "0", "0.2", "0.21000000000000002"},
	} {
		rec, ok := byKey[key]
		if !ok {
			t.Fatalf("no line for %s", key)
		}
		if got := rec[30:39]; !slices.Equal(got, want) {
			t.Errorf("%s: %q, want %q", key, got, want)
		}
	}
}

// The offline file carries the buyer's figures in its dataset and the
// controls that read them, so that it judges and paces as the served page.
func TestExportCarriesTheBuyersFigures(t *testing.T) {
	ds := Aggregate(buyerRuns(t), time.Date(2026, 4, 2, 0, 0, 0, 0, time.UTC))
	var buf bytes.Buffer
	if err := Export(&buf, ds); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	for _, want := range []string{`"frame_interval_sec":5`, `"search":true`, `"frames_dropped":9`, `"ttft_tail":{"due":24`,
		`"tps_na":true`, `"warnings":["prompts served from a cache`, `id="pacing-buttons"`, `id="stat-buttons"`, "function judgedSentence("} {
		if !strings.Contains(page, want) {
			t.Errorf("the exported page lacks %s", want)
		}
	}
}
