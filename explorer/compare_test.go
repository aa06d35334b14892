package explorer

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// profile is how a synthetic combination's requests are drawn: medians and
// the spread (sigma of a log-normal) around them.
type profile struct {
	ttft, e2e, tps float64
	spread         float64
	failed         int
}

// synthRun is a completed run of one configuration whose every combination
// draws n requests from p (p(k) may differ per combination).
func synthRun(id string, seed uint64, n int, keys []protocol.ComboKey, p func(protocol.ComboKey) profile) protocol.Run {
	rng := rand.New(rand.NewPCG(seed, 7))
	r := protocol.Run{
		ID: id, Status: protocol.RunCompleted, Source: protocol.SourceLab,
		Config:     protocol.Configuration{Model: "Qwen3-VL-4B-Instruct", ParamsB: 4.4, Quantization: "Q8_0", Engine: "llama.cpp", Device: "Jetson AGX Orin"},
		Workload:   protocol.Workload{MaxTokens: 128},
		FinishedAt: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(seed) * time.Hour),
	}
	for _, k := range keys {
		pr := p(k)
		c := protocol.Combination{ComboKey: k}
		noise := func() float64 { return math.Exp(rng.NormFloat64() * pr.spread) }
		for i := range n {
			rec := protocol.RequestRecord{Seq: i, TTFT: pr.ttft * noise(), E2E: pr.e2e * noise(), TPS: pr.tps * noise()}
			if i < pr.failed {
				rec = protocol.RequestRecord{Seq: i, Error: "HTTP 400: exceeds largest input"}
				c.Failed++
			} else {
				c.Completed++
			}
			c.Requests = append(c.Requests, rec)
		}
		r.Combinations = append(r.Combinations, c)
	}
	return r
}

func keys(n int) []protocol.ComboKey {
	var out []protocol.ComboKey
	sizes := []string{"480p", "720p", "1080p"}
	for i := range n {
		out = append(out, protocol.ComboKey{Size: sizes[i%3], Images: 1, Cameras: 1 + i/3})
	}
	return out
}

func steady(protocol.ComboKey) profile { return profile{ttft: 0.25, e2e: 4, tps: 30, spread: 0.05} }

func metricOf(t *testing.T, cc ComboChange, key string) MetricChange {
	t.Helper()
	for _, m := range cc.Metrics {
		if m.Metric == key {
			return m
		}
	}
	t.Fatalf("combination %v has no metric %s", cc.ComboKey, key)
	return MetricChange{}
}

func TestCompareSlowerTTFTIsWorse(t *testing.T) {
	ks := keys(3)
	a := synthRun("a", 1, 24, ks, steady)
	slow := protocol.ComboKey{Size: "720p", Images: 1, Cameras: 1}
	b := synthRun("b", 2, 24, ks, func(k protocol.ComboKey) profile {
		p := steady(k)
		if k == slow {
			p.ttft *= 1.3
		}
		return p
	})
	c, err := Compare(&a, &b)
	if err != nil {
		t.Fatal(err)
	}
	if c.Verdict != VerdictWorse || c.Worse == 0 {
		t.Fatalf("verdict %s (%d worse), want worse", c.Verdict, c.Worse)
	}
	for _, cc := range c.Combos {
		m := metricOf(t, cc, "ttft_p50")
		want := VerdictSame
		if cc.ComboKey == slow {
			want = VerdictWorse
		}
		if m.Verdict != want {
			t.Errorf("%v TTFT p50 %.3f → %.3f (p %.2g): %s, want %s", cc.ComboKey, m.A, m.B, m.P, m.Verdict, want)
		}
		if e := metricOf(t, cc, "e2e_p50"); e.Verdict != VerdictSame {
			t.Errorf("%v E2E unchanged but %s", cc.ComboKey, e.Verdict)
		}
	}
}

// With the demo's 8 requests per level, a clear regression (every request
// of B slower than every one of A) is still found.
func TestCompareEightRequestsFindAClearRegression(t *testing.T) {
	ks := keys(1)
	a := synthRun("a", 1, 8, ks, steady)
	b := synthRun("b", 2, 8, ks, func(k protocol.ComboKey) profile { p := steady(k); p.e2e *= 1.3; return p })
	c, err := Compare(&a, &b)
	if err != nil {
		t.Fatal(err)
	}
	if m := metricOf(t, c.Combos[0], "e2e_p50"); m.Verdict != VerdictWorse {
		t.Fatalf("E2E %.2f → %.2f (p %.2g): %s, want worse", m.A, m.B, m.P, m.Verdict)
	}
}

func TestCompareFasterIsBetter(t *testing.T) {
	ks := keys(2)
	a := synthRun("a", 1, 16, ks, steady)
	b := synthRun("b", 2, 16, ks, func(k protocol.ComboKey) profile {
		p := steady(k)
		p.tps *= 1.4
		p.ttft *= 0.7
		return p
	})
	c, err := Compare(&a, &b)
	if err != nil {
		t.Fatal(err)
	}
	if c.Verdict != VerdictBetter || c.Worse != 0 {
		t.Fatalf("verdict %s (%d worse, %d better), want better", c.Verdict, c.Worse, c.Better)
	}
	if m := metricOf(t, c.Combos[0], "tps_p50"); m.Verdict != VerdictBetter || m.RelChange < 0.2 {
		t.Errorf("TPS %v → %v (%+.0f%%): %s, want better", m.A, m.B, m.RelChange*100, m.Verdict)
	}
}

// A shift of 15% in requests spread far wider than that is noise: the
// medians differ, the verdict must be "same".
func TestCompareNoisyShiftIsSame(t *testing.T) {
	ks := keys(3)
	noisy := func(k protocol.ComboKey) profile { return profile{ttft: 0.25, e2e: 4, tps: 30, spread: 0.6} }
	a := synthRun("a", 1, 8, ks, noisy)
	b := synthRun("b", 2, 8, ks, func(k protocol.ComboKey) profile {
		p := noisy(k)
		p.ttft *= 1.15
		p.e2e *= 1.15
		return p
	})
	c, err := Compare(&a, &b)
	if err != nil {
		t.Fatal(err)
	}
	moved := false
	for _, cc := range c.Combos {
		if m := metricOf(t, cc, "ttft_p50"); math.Abs(m.RelChange) > 0.1 {
			moved = true
		}
	}
	if !moved {
		t.Fatal("the synthetic medians did not move; the test checks nothing")
	}
	if c.Verdict != VerdictSame {
		for _, cc := range c.Combos {
			for _, m := range cc.Metrics {
				t.Logf("%v %s %.3f → %.3f (p %.2g) %s", cc.ComboKey, m.Label, m.A, m.B, m.P, m.Verdict)
			}
		}
		t.Fatalf("verdict %s, want same: the shift is within the requests' spread", c.Verdict)
	}
}

// A tiny shift in a long, tight run is real but negligible: same.
func TestCompareNegligibleShiftIsSame(t *testing.T) {
	ks := keys(1)
	tight := func(protocol.ComboKey) profile { return profile{ttft: 0.25, e2e: 4, tps: 30, spread: 0.005} }
	a := synthRun("a", 1, 200, ks, tight)
	b := synthRun("b", 2, 200, ks, func(k protocol.ComboKey) profile { p := tight(k); p.ttft *= 1.03; return p })
	c, err := Compare(&a, &b)
	if err != nil {
		t.Fatal(err)
	}
	m := metricOf(t, c.Combos[0], "ttft_p50")
	if m.P >= compareAlpha {
		t.Fatalf("p %v: the test needs a significant shift", m.P)
	}
	if m.Verdict != VerdictSame {
		t.Fatalf("a 3%% shift is %s, want same (below %v%%)", m.Verdict, compareMinRel*100)
	}
}

func TestCompareFailuresAreWorse(t *testing.T) {
	ks := keys(1)
	a := synthRun("a", 1, 8, ks, steady)
	b := synthRun("b", 2, 8, ks, func(k protocol.ComboKey) profile { p := steady(k); p.failed = 8; return p })
	c, err := Compare(&a, &b)
	if err != nil {
		t.Fatal(err)
	}
	m := metricOf(t, c.Combos[0], "success")
	if m.A != 100 || m.B != 0 || m.Verdict != VerdictWorse {
		t.Fatalf("success %v%% → %v%%: %s, want 100 → 0 worse", m.A, m.B, m.Verdict)
	}
	if tt := metricOf(t, c.Combos[0], "ttft_p50"); tt.Verdict != VerdictUnknown {
		t.Errorf("TTFT with no completed request in B: %s, want %s", tt.Verdict, VerdictUnknown)
	}
	// One failure in eight is within noise.
	b1 := synthRun("b", 2, 8, ks, func(k protocol.ComboKey) profile { p := steady(k); p.failed = 1; return p })
	c1, _ := Compare(&a, &b1)
	if m := metricOf(t, c1.Combos[0], "success"); m.Verdict != VerdictSame {
		t.Errorf("one failure in eight: %s, want same", m.Verdict)
	}
}

func TestCompareRefusesOtherConfiguration(t *testing.T) {
	a := synthRun("a", 1, 8, keys(1), steady)
	b := synthRun("b", 2, 8, keys(1), steady)
	b.Config.Quantization = "Q4_K_M"
	b.Config.Device = "Jetson Orin NX"
	_, err := Compare(&a, &b)
	var mm *ConfigMismatchError
	if !errors.As(err, &mm) {
		t.Fatalf("error %v, want a ConfigMismatchError", err)
	}
	if len(mm.Parts) != 2 || mm.Parts[0].Field != "quantization" || mm.Parts[1].Field != "device" {
		t.Fatalf("parts %+v, want quantization and device", mm.Parts)
	}
	for _, want := range []string{`quantization "Q8_0" vs "Q4_K_M"`, `device "Jetson AGX Orin" vs "Jetson Orin NX"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %s", err, want)
		}
	}
}

func TestCompareCombinationsInOneRunOnly(t *testing.T) {
	a := synthRun("a", 1, 8, keys(2), steady)
	b := synthRun("b", 2, 8, keys(3)[1:], steady)
	b.Workload.MaxTokens = 256
	c, err := Compare(&a, &b)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Combos) != 1 || len(c.OnlyA) != 1 || len(c.OnlyB) != 1 {
		t.Fatalf("combos %d, only A %v, only B %v; want 1, 1, 1", len(c.Combos), c.OnlyA, c.OnlyB)
	}
	if len(c.Warnings) != 1 || !strings.Contains(c.Warnings[0], "max tokens") {
		t.Fatalf("warnings %q, want the max tokens", c.Warnings)
	}
}

func TestCompareIsRepeatable(t *testing.T) {
	ks := keys(3)
	noisy := func(protocol.ComboKey) profile { return profile{ttft: 0.25, e2e: 4, tps: 30, spread: 0.3} }
	a := synthRun("a", 1, 8, ks, noisy)
	b := synthRun("b", 2, 8, ks, noisy)
	c1, _ := Compare(&a, &b)
	c2, _ := Compare(&a, &b)
	for i := range c1.Combos {
		for j := range c1.Combos[i].Metrics {
			if c1.Combos[i].Metrics[j] != c2.Combos[i].Metrics[j] {
				t.Fatalf("two comparisons of the same runs differ: %+v vs %+v", c1.Combos[i].Metrics[j], c2.Combos[i].Metrics[j])
			}
		}
	}
}

// TestCompareFalseAlarmRate measures how often two runs drawn from the same
// distributions are called worse anywhere: 19 combinations × 5 metrics, at 8
// (the demo's), 16, 24 and 48 requests per combination. The test ranks, so
// the size of the spread does not change the rate. docs/compare.md quotes
// the figures it logs.
func TestCompareFalseAlarmRate(t *testing.T) {
	if testing.Short() {
		t.Skip("measures 800 comparisons")
	}
	ks := keys(19)
	for _, spread := range []float64{0.15} {
		for _, n := range []int{8, 16, 24, 48} {
			p := func(protocol.ComboKey) profile { return profile{ttft: 0.25, e2e: 4, tps: 30, spread: spread} }
			const pairs = 200
			runsWorse, metricsWorse, tests := 0, 0, 0
			for i := range pairs {
				a := synthRun("a", uint64(2*i+1), n, ks, p)
				b := synthRun("b", uint64(2*i+2), n, ks, p)
				c, err := Compare(&a, &b)
				if err != nil {
					t.Fatal(err)
				}
				if c.Verdict == VerdictWorse {
					runsWorse++
				}
				metricsWorse += c.Worse
				for _, cc := range c.Combos {
					tests += len(cc.Metrics)
				}
			}
			runRate := float64(runsWorse) / pairs
			t.Logf("σ %.2f, %d requests: %d of %d identical pairs called worse (%.0f%%); %d of %d metric comparisons (%.2f%%)",
				spread, n, runsWorse, pairs, runRate*100, metricsWorse, tests, 100*float64(metricsWorse)/float64(tests))
			if runRate > 0.10 {
				t.Errorf("σ %.2f, %d requests: %.0f%% of identical runs called worse, want at most 10%%", spread, n, runRate*100)
			}
		}
	}
}

// BenchmarkCompare: two runs of 19 combinations with 24 requests each, the
// cost of one uncached regression marker or one compare page.
func BenchmarkCompare(b *testing.B) {
	ks := keys(19)
	x := synthRun("a", 1, 24, ks, steady)
	y := synthRun("b", 2, 24, ks, steady)
	for b.Loop() {
		if _, err := Compare(&x, &y); err != nil {
			b.Fatal(err)
		}
	}
}

// A paced level is matched with the same level on the same frame clock,
// never with the back-to-back one of the same size and cameras; more
// frames dropped is worse; a level a search chose says so on its side.
func TestComparePacedAndSearchedCombinations(t *testing.T) {
	b2b := protocol.ComboKey{Size: "720p", Images: 1, Cameras: 8}
	every5 := protocol.ComboKey{Size: "720p", Images: 1, Cameras: 8, FrameIntervalSec: 5}
	every2 := protocol.ComboKey{Size: "720p", Images: 1, Cameras: 8, FrameIntervalSec: 2}
	pace := func(r *protocol.Run, k protocol.ComboKey, dropped int) {
		c, _ := r.Combination(k)
		c.Pacing = &protocol.Pacing{FramesDue: c.Completed + c.Failed + dropped, FramesSent: c.Completed + c.Failed, FramesDropped: dropped}
	}
	a := synthRun("a", 1, 24, []protocol.ComboKey{b2b, every5, every2}, steady)
	b := synthRun("b", 2, 24, []protocol.ComboKey{every5, b2b}, steady)
	pace(&a, every5, 0)
	pace(&a, every2, 1)
	pace(&b, every5, 24)
	b.Combinations[1].Search = true
	c, err := Compare(&a, &b)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Combos) != 2 || c.Combos[0].ComboKey != b2b || c.Combos[1].ComboKey != every5 {
		t.Fatalf("combinations %+v, want back to back then every 5 s, matched by their whole key", c.Combos)
	}
	if len(c.OnlyA) != 1 || c.OnlyA[0] != every2 {
		t.Errorf("only in A: %v, want the 2 s level", c.OnlyA)
	}
	if !c.Combos[0].SearchB || c.Combos[0].SearchA {
		t.Errorf("back to back: search %v in A, %v in B; want B's only", c.Combos[0].SearchA, c.Combos[0].SearchB)
	}
	for _, m := range c.Combos[0].Metrics {
		if m.Metric == "dropped" {
			t.Error("a back-to-back level compares dropped frames")
		}
	}
	d := metricOf(t, c.Combos[1], "dropped")
	if d.Verdict != VerdictWorse || d.A != 0 || d.B != 50 || d.NA != 24 || d.NB != 48 || d.HigherIsBetter {
		t.Errorf("dropped frames 0 of 24 -> 24 of 48: %+v, want worse", d)
	}
	if c.Verdict != VerdictWorse || c.Combos[1].Verdict != VerdictWorse {
		t.Errorf("verdict %s (paced level %s), want worse", c.Verdict, c.Combos[1].Verdict)
	}
	// The same drops on both sides are the same.
	pace(&b, every5, 0)
	if c, _ := Compare(&a, &b); metricOf(t, c.Combos[1], "dropped").Verdict != VerdictSame {
		t.Errorf("no drops on either side: %+v", metricOf(t, c.Combos[1], "dropped"))
	}
}

// A level measured as one round is never set against the same level
// measured sustained: cameras that keep sending wait longer by the
// method, not by a regression. Each is compared with its own load only,
// and the runs' loads are named.
func TestCompareNeverSetsOneRoundAgainstSustained(t *testing.T) {
	round := protocol.ComboKey{Size: "720p", Images: 1, Cameras: 8}
	sustained := protocol.ComboKey{Size: "720p", Images: 1, Cameras: 8, Load: protocol.LoadSustained}
	slower := func(k protocol.ComboKey) profile {
		p := steady(k)
		if k.Sustained() {
			p.ttft *= 2
		}
		return p
	}
	a := synthRun("a", 1, 24, []protocol.ComboKey{round}, steady)
	b := synthRun("b", 2, 24, []protocol.ComboKey{round, sustained}, slower)
	c, err := Compare(&a, &b)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Combos) != 1 || c.Combos[0].ComboKey != round {
		t.Fatalf("compared %+v, want the one-round level alone", c.Combos)
	}
	if len(c.OnlyB) != 1 || c.OnlyB[0] != sustained {
		t.Errorf("only in B: %v, want the sustained level", c.OnlyB)
	}
	if c.Verdict == VerdictWorse {
		t.Errorf("verdict worse: a sustained level was judged against a round")
	}
	if !slices.ContainsFunc(c.Warnings, func(w string) bool { return strings.Contains(w, "sustained in B") }) {
		t.Errorf("warnings %q, want the loads named", c.Warnings)
	}
}
