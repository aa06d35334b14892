package main

import (
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/rs/zerolog"

	"github.com/vlmfleet/vlmfleet/controller"
	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/controller/client"
	"github.com/vlmfleet/vlmfleet/explorer"
	"github.com/vlmfleet/vlmfleet/harness/labtest"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// recordedRun is labtest.ResultDoc with 16 request records in each
// combination, their TTFT around ttft (±10%, the same spread every run).
func recordedRun(id string, day int, ttft float64) protocol.Run {
	r := labtest.ResultDoc(id, "Qwen3-VL-4B-Instruct")
	r.CreatedAt = r.CreatedAt.AddDate(0, 0, day)
	r.FinishedAt = r.CreatedAt.Add(time.Minute)
	for i := range r.Combinations {
		c := &r.Combinations[i]
		c.Requests = nil
		for j := range 16 {
			f := 1 + 0.1*math.Sin(float64(j*7+day))
			c.Requests = append(c.Requests, protocol.RequestRecord{Seq: j, TTFT: ttft * f, LastToken: 4 * f, E2E: 4 * f, TPS: 30 / f, CompletionTokens: 100})
		}
		c.Completed = len(c.Requests)
	}
	return r
}

// diffLab is a controller serving the explorer, holding three runs of one
// configuration (the third slower) and one of another quantization; it
// returns the imported ids in that order.
func diffLab(t *testing.T) (*labtest.Lab, []string) {
	t.Helper()
	l := labtest.Start(t, controller.Options{Explorer: func(runs controller.RunSource) http.Handler {
		return explorer.NewHandler(runs, zerolog.Nop())
	}})
	q4 := recordedRun("q4", 3, 0.25)
	q4.Config.Quantization = "Q4_K_M"
	cl, err := client.New(l.Ctl.HTTPURL(), client.WithToken(l.Ctl.APIToken()))
	if err != nil {
		t.Fatal(err)
	}
	res, err := cl.Import(context.Background(), []api.ImportEntry{
		{Origin: "t", Run: recordedRun("r1", 0, 0.25)}, {Origin: "t", Run: recordedRun("r2", 1, 0.25)},
		{Origin: "t", Run: recordedRun("r3", 2, 0.40)}, {Origin: "t", Run: q4},
	})
	if err != nil {
		t.Fatal(err)
	}
	return l, res.IDs
}

func TestResultsDiff(t *testing.T) {
	l, ids := diffLab(t)
	base := []string{"results", "diff", "--controller", l.Ctl.HTTPURL()}

	code, out, errOut := cliRun(t, nil, append(base, ids[0], ids[1])...)
	if code != 0 || !strings.Contains(out, "B against A: same (0 worse, 0 better)") || !strings.Contains(out, "720p 1 img 2 cam") {
		t.Fatalf("two equal runs: exit %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"Qwen3-VL-4B-Instruct 4.4B Q8_0 · llama.cpp · Jetson AGX Orin", "TTFT p50", "success", "rule: worse or better only when"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	// Worse: shown with exit 0, unless --fail-on-worse.
	code, out, errOut = cliRun(t, nil, append(base, ids[1], ids[2])...)
	if code != 0 || !strings.Contains(out, "B against A: worse") || !strings.Contains(out, "0.25 → 0.39 s +58% worse") {
		t.Fatalf("a slower run: exit %d\n%s%s", code, out, errOut)
	}
	code, _, errOut = cliRun(t, nil, append(base, "--fail-on-worse", ids[1], ids[2])...)
	if code != 1 || !strings.Contains(errOut, "is worse than run "+ids[1]) {
		t.Fatalf("--fail-on-worse on a slower run: exit %d, %s", code, errOut)
	}
	if code, _, errOut = cliRun(t, nil, append(base, "--fail-on-worse", ids[2], ids[1])...); code != 0 {
		t.Fatalf("--fail-on-worse on a faster run: exit %d, %s", code, errOut)
	}

	// --json is the API's answer.
	code, out, _ = cliRun(t, nil, append(base, "--json", ids[1], ids[2])...)
	var c explorer.Comparison
	if err := json.Unmarshal([]byte(out), &c); code != 0 || err != nil || c.Verdict != explorer.VerdictWorse || c.B.ID != ids[2] {
		t.Fatalf("--json: exit %d, %v, %+v", code, err, c)
	}

	// Another configuration is refused, naming what differs.
	code, _, errOut = cliRun(t, nil, append(base, ids[2], ids[3])...)
	if code != 1 || !strings.Contains(errOut, `quantization "Q8_0" vs "Q4_K_M"`) {
		t.Fatalf("another quantization: exit %d, %s", code, errOut)
	}
	code, _, errOut = cliRun(t, nil, append(base, ids[0], "nosuch")...)
	if code != 1 || !strings.Contains(errOut, `no run "nosuch"`) {
		t.Fatalf("unknown run: exit %d, %s", code, errOut)
	}
	code, _, errOut = cliRun(t, nil, append(base, ids[0])...)
	if code != 2 || !strings.Contains(errOut, "want two run ids") {
		t.Fatalf("one id: exit %d, %s", code, errOut)
	}

	// The page the output's runs can also be compared on is the controller's.
	resp, err := http.Get(l.Ctl.HTTPURL() + explorer.ComparePage(ids[1], ids[2]))
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(page), "Compare two runs") {
		t.Fatalf("the controller's compare page: %d %.200s", resp.StatusCode, page)
	}
}

// Paced and searched combinations: each level is set against the same level
// on the same frame clock, named with its interval, a searched one marked,
// and the dropped frames have their own column.
func TestResultsDiffPacedAndSearched(t *testing.T) {
	a, b := recordedRun("a", 0, 0.25), recordedRun("b", 1, 0.25)
	for _, r := range []*protocol.Run{&a, &b} {
		c := r.Combinations[0]
		c.FrameIntervalSec = 5
		dropped := 0
		if r == &b {
			dropped = 40
		}
		c.Pacing = &protocol.Pacing{FramesDue: c.Completed + dropped, FramesSent: c.Completed, FramesDropped: dropped}
		r.Combinations = append(r.Combinations, c)
	}
	b.Combinations[1].Search = true
	cmp, err := explorer.Compare(&a, &b)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	printComparison(&out, cmp)
	lines := strings.Split(out.String(), "\n")
	find := func(prefix string) string {
		for _, l := range lines {
			if strings.HasPrefix(l, prefix) {
				return l
			}
		}
		t.Fatalf("no line %q in\n%s", prefix, out.String())
		return ""
	}
	if h := find("combination"); !strings.HasSuffix(strings.TrimSpace(h), "frames dropped") {
		t.Errorf("header %q, want a frames dropped column", h)
	}
	if paced := find("720p 1 img 1 cam every 5 s "); !strings.HasSuffix(strings.TrimSpace(paced), "0 → 71% +71 pt worse") {
		t.Errorf("paced line %q, want its dropped frames worse", paced)
	}
	if b2b := find("720p 1 img 1 cam  "); strings.Contains(b2b, "(search)") || strings.HasSuffix(strings.TrimSpace(b2b), "worse") {
		t.Errorf("back-to-back line %q: not searched, no frames", b2b)
	}
	find("720p 1 img 2 cam (search) ")
	if !strings.Contains(out.String(), "B against A: worse (1 worse") {
		t.Errorf("more frames dropped is worse:\n%s", out.String())
	}
}

// Runs of two power modes: the figures side by side, the sentence instead
// of a verdict, and --fail-on-worse does not fail on a slower mode.
func TestResultsDiffPowerModes(t *testing.T) {
	l := labtest.Start(t, controller.Options{Explorer: func(runs controller.RunSource) http.Handler {
		return explorer.NewHandler(runs, zerolog.Nop())
	}})
	maxn, low := recordedRun("maxn", 0, 0.25), recordedRun("low", 1, 0.40)
	maxn.Config.PowerMode, low.Config.PowerMode = "MAXN", "15W"
	cl, err := client.New(l.Ctl.HTTPURL(), client.WithToken(l.Ctl.APIToken()))
	if err != nil {
		t.Fatal(err)
	}
	res, err := cl.Import(context.Background(), []api.ImportEntry{{Origin: "t", Run: maxn}, {Origin: "t", Run: low}})
	if err != nil {
		t.Fatal(err)
	}
	code, out, errOut := cliRun(t, nil, "results", "diff", "--controller", l.Ctl.HTTPURL(), "--fail-on-worse", res.IDs[0], res.IDs[1])
	if code != 0 || !strings.Contains(out, "B against A: not comparable as a regression: measured in MAXN and 15W") {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	if !strings.Contains(out, "0.25 → 0.39 s +56%") {
		t.Errorf("want TTFT's figures side by side:\n%s", out)
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "720p") && (strings.Contains(line, "worse") || strings.Contains(line, "better")) {
			t.Errorf("a figure judged: %s", line)
		}
	}
}

// A figure with too few requests on one side says so in words: each
// side's count and what comparing needs, not a bare "— (3/1 requests)";
// said once per combination under the table, so that the table keeps the
// width of its figures.
func TestResultsDiffSaysWhyAFigureIsNotCompared(t *testing.T) {
	var out strings.Builder
	unknown := func(metric, label string, na, nb int) explorer.MetricChange {
		return explorer.MetricChange{Metric: metric, Label: label, NA: na, NB: nb, Verdict: explorer.VerdictUnknown}
	}
	printChanges(&out, []explorer.ComboChange{
		{ComboKey: protocol.ComboKey{Size: "720p", Images: 1, Cameras: 4}, Metrics: []explorer.MetricChange{
			unknown("ttft_p50", "TTFT p50", 3, 1), unknown("ttft_p90", "TTFT p90", 3, 1), unknown("e2e_p50", "E2E p50", 3, 1)}},
		{ComboKey: protocol.ComboKey{Size: "720p", Images: 1, Cameras: 1}, Metrics: []explorer.MetricChange{
			{Metric: "ttft_p50", Label: "TTFT p50", NA: 8, NB: 8, A: 0.25, B: 0.26, Unit: "s", Verdict: explorer.VerdictSame},
			{Metric: "ttft_p90", Label: "TTFT p90", NA: 8, NB: 8, A: 0.3, B: 0.31, Unit: "s", Verdict: explorer.VerdictSame},
			{Metric: "e2e_p50", Label: "E2E p50", NA: 8, NB: 8, A: 1.2, B: 1.2, Unit: "s", Verdict: explorer.VerdictSame}}},
	})
	text := out.String()
	want := "720p 1 img 4 cam: not compared: 3 requests in A, 1 in B; each side needs at least 3"
	if n := strings.Count(text, "3 requests in A, 1 in B"); n != 1 || !strings.Contains(text, want) {
		t.Errorf("diff:\n%s\nsays why %d times, want once: %q", text, n, want)
	}
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "720p 1 img 4 cam ") && strings.Count(line, "not compared") != 3 {
			t.Errorf("the combination's figures %q, want each marked not compared", line)
		}
		if n := utf8.RuneCountInString(line); n > 100 {
			t.Errorf("a line of %d characters: %q", n, line)
		}
	}
}
