package simengine

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/vlmfleet/vlmfleet/explorer/profiles"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// saturate finds the max-throughput point as a profile run does
// (protocol.ProfileAutoRule): each level a closed loop of concurrency
// clients, each sending its next request as its answer ends, over the
// requests a level measures by default (protocol.ProfileWorkload's
// LevelRequests, as the demo does); concurrency doubles from 1 until
// request throughput grows by less than 5 % or the ceiling; the point is
// the smallest level within 5 % of the highest.
func saturate(t *testing.T, p Profile, prompt, osl int) (int, LevelFigures) {
	t.Helper()
	type level struct {
		c int
		f LevelFigures
	}
	w := protocol.DefaultProfile()
	var levels []level
	best := 0.0
	for c := 1; c <= w.AutoCeiling; c *= 2 {
		f, err := SimulateLevel(p, prompt, osl, c, w.LevelRequests(c), 1)
		if err != nil {
			t.Fatal(err)
		}
		grew := len(levels) == 0 || f.Throughput >= 1.05*levels[len(levels)-1].f.Throughput
		levels = append(levels, level{c, f})
		best = math.Max(best, f.Throughput)
		if !grew {
			break
		}
	}
	for _, l := range levels {
		if l.f.Throughput >= 0.95*best {
			return l.c, l.f
		}
	}
	t.Fatal("no level")
	return 0, LevelFigures{}
}

// clientPromptSlack is how far the prompt a profile run sends may be from
// the published line's by the simulator's count, in tokens: the ISL is
// calibrated within 1 %, and the client's own chat text (the default
// prompt where a line has no ISL) and template differ from the fit's by a
// few tokens.
func clientPromptSlack(isl int) int { return isl/100 + 8 }

// off is the relative error of got against a published figure.
func off(got, want float64) float64 { return (got - want) / want }

// Every published line is reproduced by the model of its configuration
// as a profile run measures it: the Min Latency figures within 10 %, the
// Max Throughput request throughput within 15 % at the point the doubling
// rule picks, each level a closed loop over the default requests, and so
// for a prompt a few tokens shorter or longer than the published one (what
// a client's calibrated text sends). With -v it logs the table
// docs/engines.md shows.
func TestDataCenterReproducesPublished(t *testing.T) {
	rows, err := profiles.Published()
	if err != nil {
		t.Fatal(err)
	}
	var worstMin, worstMax float64
	t.Log("| model | GPU | precision | TP | table | ISL | OSL | published | simulated | error |")
	t.Log("|---|---|---|---|---|---|---|---|---|---|")
	for _, r := range rows {
		p, err := LookupTP(r.GPU, r.Model, r.Precision, "", r.TP)
		if err != nil {
			t.Fatalf("%s %s %s TP%d: %v", r.Model, r.GPU, r.Precision, r.TP, err)
		}
		isl, islText := 0, "-"
		if r.ISL != nil {
			isl, islText = *r.ISL, fmt.Sprint(*r.ISL)
		}
		n := publishedPromptTokens(r.Model, isl, r.Width, r.Height)
		head := fmt.Sprintf("| %s | %s | %s | %d | %s | %s | %d |", r.Model, r.GPU, r.Precision, r.TP, r.Profile, islText, r.OSL)
		if r.Profile == protocol.ProfileMinLatency {
			f, err := SimulateLevel(p, n, r.OSL, 1, 3, 1)
			if err != nil {
				t.Fatal(err)
			}
			var pub, sim []string
			worst := 0.0
			for _, c := range []struct {
				name      string
				want      *float64
				got, unit float64
			}{{"TTFT", r.TTFTMs, f.TTFT, 1000}, {"ITL", r.ITLMs, f.ITL, 1000}, {"latency", r.RequestLatencyMs, f.Latency, 1000}} {
				if c.want == nil {
					continue
				}
				e := off(c.got*c.unit, *c.want)
				if math.Abs(e) > math.Abs(worst) {
					worst = e
				}
				pub = append(pub, fmt.Sprintf("%s %g ms", c.name, *c.want))
				sim = append(sim, fmt.Sprintf("%.4g ms", c.got*c.unit))
				if math.Abs(e) > 0.10 {
					t.Errorf("%s %s: simulated %.4g ms, published %g ms (%+.1f %%)", head, c.name, c.got*c.unit, *c.want, 100*e)
				}
			}
			worstMin = math.Max(worstMin, math.Abs(worst))
			t.Logf("%s %s | %s | %+.1f %% |", head, strings.Join(pub, ", "), strings.Join(sim, ", "), 100*worst)
			continue
		}
		c, f := saturate(t, p, n, r.OSL)
		e := off(f.Throughput, *r.RequestThroughput)
		if math.Abs(e) > 0.15 {
			t.Errorf("%s throughput: simulated %.3g req/s at concurrency %d, published %g (%+.1f %%)", head, f.Throughput, c, *r.RequestThroughput, 100*e)
		}
		// The prompt a client sends is the published one give or take a
		// few tokens; the plateau must not fall off an edge for them.
		slack := clientPromptSlack(isl)
		lo, hi := f.Throughput, f.Throughput
		for _, m := range []int{n - slack, n + slack} {
			cm, fm := saturate(t, p, m, r.OSL)
			em := off(fm.Throughput, *r.RequestThroughput)
			lo, hi = math.Min(lo, fm.Throughput), math.Max(hi, fm.Throughput)
			if math.Abs(em) > math.Abs(e) {
				e = em
			}
			if math.Abs(em) > 0.15 {
				t.Errorf("%s throughput with a prompt of %d tokens (published %d): simulated %.3g req/s at concurrency %d, published %g (%+.1f %%)",
					head, m, n, fm.Throughput, cm, *r.RequestThroughput, 100*em)
			}
		}
		worstMax = math.Max(worstMax, math.Abs(e))
		itl := ""
		if r.ITLMs != nil {
			itl = fmt.Sprintf(" (ITL %g ms)", *r.ITLMs)
		}
		t.Logf("%s %g req/s%s | %.3g req/s at concurrency %d (ITL %.3g ms); %.3g–%.3g at ±%d prompt tokens | %+.1f %% |",
			head, *r.RequestThroughput, itl, f.Throughput, c, 1000*f.ITL, lo, hi, slack, 100*e)
	}
	t.Logf("worst: min latency %.1f %%, max throughput %.1f %%", 100*worstMin, 100*worstMax)
}

// A tensor-parallel size that is not published is scaled from the
// nearest published one: faster by (TP/TP₀)^-½, with a larger KV cache;
// one whose GPUs cannot hold the weights is refused.
func TestDataCenterUnpublishedTP(t *testing.T) {
	two, err := LookupTP("A100-SXM4-80GB", "Llama-3.2-11B-Vision-Instruct", "BF16", "", 2)
	if err != nil {
		t.Fatal(err)
	}
	four, err := LookupTP("A100-SXM4-80GB", "Llama-3.2-11B-Vision-Instruct", "BF16", "", 4)
	if err != nil {
		t.Fatal(err)
	}
	if four.TP() != 4 || four.DC.FromTP != 2 || four.Key() == two.Key() {
		t.Fatalf("TP4: %s from TP%d", four.Key(), four.DC.FromTP)
	}
	n := float64(publishedPromptTokens(four.Model, 20000, 1120, 1120))
	if r := four.DC.ttft.at(n) / two.DC.ttft.at(n); math.Abs(r-math.Sqrt(0.5)) > 1e-9 {
		t.Errorf("TTFT TP4/TP2 %.4f, want %.4f", r, math.Sqrt(0.5))
	}
	if four.DC.lines[0].seqs <= two.DC.lines[0].seqs {
		t.Errorf("KV cache at TP4 holds %g requests, at TP2 %g: want more", four.DC.lines[0].seqs, two.DC.lines[0].seqs)
	}
	if _, err := LookupTP("L40S", "Llama-3.2-90B-Vision-Instruct", "BF16", "", 2); err == nil || !strings.Contains(err.Error(), "needs at least 8") {
		t.Errorf("90B BF16 on two L40S: %v, want refused for needing 8", err)
	}
	if _, err := LookupTP("RTX PRO 6000", "Qwen3-VL-4B-Instruct", "BF16", "", 2); err == nil {
		t.Error("an edge device at TP2: accepted")
	}
}
