package explorer

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// Verdicts of a comparison: B (the later run) against A.
const (
	VerdictBetter = "better"
	VerdictWorse  = "worse"
	VerdictSame   = "same"
	// VerdictUnknown: too few request records on one side to say anything.
	VerdictUnknown = "not comparable"
)

// The verdict rule (docs/compare.md). A metric of a combination is worse
// or better only when both hold:
//   - a two-sided Mann-Whitney test of the two runs' per-request values
//     gives p below compareAlpha, so that the spread of the requests, not
//     just their summary, decides;
//   - the change is at least compareMinRel of A (compareMinSuccess points
//     for the success rate), so that a real but negligible shift, which a
//     long run detects, is "same".
//
// Alpha is small because one run has tens of combinations and five metrics
// each: TestCompareFalseAlarmRate measures how often two runs drawn from one
// distribution get a "worse" anywhere. (A percentile bootstrap was tried
// first: at 8 requests per combination its intervals are too narrow, and
// it called 31% of identical runs worse.)
const (
	compareAlpha      = 0.001
	compareMinRel     = 0.05
	compareMinSuccess = 0.05
	// compareMinRequests below which a side's figures are not compared.
	compareMinRequests = 3
)

// CompareRule is the rule in one sentence, as the page and the CLI show it.
func CompareRule() string {
	return fmt.Sprintf("worse or better only when a Mann-Whitney test of the two runs' per-request values gives p < %g and the change is at least %.0f%% (success rate: %.0f points); otherwise same within noise",
		compareAlpha, compareMinRel*100, compareMinSuccess*100)
}

// CompareMinRequests is the fewest values (requests, or frames for
// dropped frames) each side needs for a figure to be compared.
const CompareMinRequests = compareMinRequests

// NotComparedText says why a figure was not compared, for the CLI and the
// page (compare.js notComparedText): "not compared: 3 requests in A, 1 in
// B; each side needs at least 3".
func NotComparedText(m MetricChange) string {
	unit := "request"
	if m.Metric == "dropped" {
		unit = "frame"
	}
	return fmt.Sprintf("not compared: %s in A, %d in B; each side needs at least %d", plural(m.NA, unit), m.NB, compareMinRequests)
}

// ConfigMismatchError refuses a comparison of two configurations.
type ConfigMismatchError struct {
	A, B  string
	Parts []ConfigDiff
}

func (e *ConfigMismatchError) Error() string {
	parts := make([]string, len(e.Parts))
	for i, p := range e.Parts {
		parts[i] = fmt.Sprintf("%s %q vs %q", p.Field, p.A, p.B)
	}
	return fmt.Sprintf("runs %s and %s are of different configurations (%s): only runs of one model, quantization, engine and device are compared",
		e.A, e.B, strings.Join(parts, "; "))
}

// configDiffs lists the parts of the configuration (what makes an explorer
// row) in which a and b differ.
func configDiffs(a, b *protocol.Run) []ConfigDiff {
	ka, kb := identityOf(a), identityOf(b)
	var out []ConfigDiff
	add := func(field, x, y string) {
		if x != y {
			out = append(out, ConfigDiff{Field: field, A: x, B: y})
		}
	}
	add("model", ka.model, kb.model)
	add("parameters", FormatParams(ka.paramsB)+"B", FormatParams(kb.paramsB)+"B")
	add("quantization", ka.quant, kb.quant)
	add("engine", ka.engine, kb.engine)
	add("device", ka.device, kb.device)
	add("simulated", fmt.Sprint(ka.simulated), fmt.Sprint(kb.simulated))
	return out
}

// Compare sets run b against run a (a before, b after). Both need their
// per-request records; runs of different configurations are refused with
// a *ConfigMismatchError. Runs of one configuration in two power settings
// are set side by side but never judged (notARegression): one power mode
// is not a regression of another.
func Compare(a, b *protocol.Run) (Comparison, error) {
	if d := configDiffs(a, b); len(d) > 0 {
		return Comparison{}, &ConfigMismatchError{A: a.ID, B: b.ID, Parts: d}
	}
	c := compareFigures(a, b)
	c.PowerA, c.PowerB = runPower(a), runPower(b)
	if c.PowerA != c.PowerB {
		notARegression(&c)
	}
	return c, nil
}

// notARegression takes the judgement out of a comparison of two power
// settings, keeping its figures.
func notARegression(c *Comparison) {
	c.NotARegression = fmt.Sprintf("not comparable as a regression: measured in %s and %s", powerShown(c.PowerA), powerShown(c.PowerB))
	c.Verdict, c.Worse, c.Better = VerdictUnknown, 0, 0
	for i := range c.Combos {
		cc := &c.Combos[i]
		cc.Verdict = ""
		for j := range cc.Metrics {
			if cc.Metrics[j].Verdict != VerdictUnknown {
				cc.Metrics[j].Verdict = ""
			}
		}
	}
}

// powerShown names a run's power setting in a sentence.
func powerShown(p string) string {
	if p == "" {
		return "an unrecorded power setting"
	}
	return p
}

// compareFigures compares the runs' combinations, figure by figure.
func compareFigures(a, b *protocol.Run) Comparison {
	k := identityOf(a)
	c := Comparison{
		Config:    protocol.Configuration{Model: k.model, ParamsB: k.paramsB, Quantization: k.quant, Engine: k.engine, Device: k.device},
		Simulated: k.simulated,
		A:         runMeta(a),
		B:         runMeta(b),
		Rule:      CompareRule(),
		Warnings:  workloadWarnings(a, b),
	}
	for i := range a.Combinations {
		ca := &a.Combinations[i]
		cb, ok := b.Combination(ca.ComboKey)
		if !ok {
			c.OnlyA = append(c.OnlyA, ca.ComboKey)
			continue
		}
		c.Combos = append(c.Combos, compareCombo(ca, cb))
	}
	for i := range b.Combinations {
		if _, ok := a.Combination(b.Combinations[i].ComboKey); !ok {
			c.OnlyB = append(c.OnlyB, b.Combinations[i].ComboKey)
		}
	}
	byKey := func(x, y protocol.ComboKey) int {
		return cmp.Or(cmp.Compare(protocol.SizeRank(x.Size), protocol.SizeRank(y.Size)), cmp.Compare(x.Images, y.Images),
			cmp.Compare(x.FrameIntervalSec, y.FrameIntervalSec), cmp.Compare(x.Cameras, y.Cameras), strings.Compare(x.Load, y.Load))
	}
	slices.SortFunc(c.Combos, func(x, y ComboChange) int { return byKey(x.ComboKey, y.ComboKey) })
	slices.SortFunc(c.OnlyA, byKey)
	slices.SortFunc(c.OnlyB, byKey)
	known := 0
	for _, cc := range c.Combos {
		for _, m := range cc.Metrics {
			switch m.Verdict {
			case VerdictWorse:
				c.Worse++
			case VerdictBetter:
				c.Better++
			}
			if m.Verdict != VerdictUnknown {
				known++
			}
		}
	}
	c.Verdict = overall(c.Worse, c.Better, known)
	return c
}

func overall(worse, better, known int) string {
	switch {
	case worse > 0:
		return VerdictWorse
	case better > 0:
		return VerdictBetter
	case known == 0:
		return VerdictUnknown
	}
	return VerdictSame
}

// workloadWarnings names a run that did not complete and what the two
// workloads differ in that changes the figures themselves (not merely which
// combinations were measured).
func workloadWarnings(a, b *protocol.Run) []string {
	wa, wb := a.Workload, b.Workload
	var out []string
	for _, r := range []*protocol.Run{a, b} {
		if r.Status != protocol.RunCompleted {
			out = append(out, fmt.Sprintf("run %s is %s: its figures may be partial", r.ID, r.Status))
		}
	}
	if wa.MaxTokens != wb.MaxTokens {
		out = append(out, fmt.Sprintf("max tokens differ: %d in A, %d in B", wa.MaxTokens, wb.MaxTokens))
	}
	if wa.Prompt != wb.Prompt {
		out = append(out, "the prompts differ")
	}
	if ua, ub := switchText(wa.UniqueImages), switchText(wb.UniqueImages); ua != ub {
		out = append(out, fmt.Sprintf("unique images: %s in A, %s in B", ua, ub))
	}
	if a.Client.ImageSetHash != "" && b.Client.ImageSetHash != "" && a.Client.ImageSetHash != b.Client.ImageSetHash {
		out = append(out, "the pictures differ (image set hashes differ)")
	}
	if la, lb := loadsOf(a), loadsOf(b); la != lb {
		out = append(out, fmt.Sprintf("back-to-back levels measured %s in A, %s in B: a level is compared only with one of its own load", la, lb))
	}
	return out
}

// loadsOf says which loads a run's back-to-back levels were measured under.
func loadsOf(r *protocol.Run) string {
	var burst, sustained bool
	for _, c := range r.Combinations {
		if !c.Paced() {
			sustained = sustained || c.Sustained()
			burst = burst || !c.Sustained()
		}
	}
	switch {
	case burst && sustained:
		return "one round (as published) and sustained"
	case sustained:
		return "sustained"
	}
	return "one round, as published"
}

// metric is one compared figure: how it is taken from a request and summarised.
type metric struct {
	key, label, unit string
	higherIsBetter   bool
	// value is the request's figure; ok false leaves the request out.
	value func(r *protocol.RequestRecord) (float64, bool)
	// stat summarises sorted values.
	stat func(sorted []float64) float64
	// minChange is the smallest change that counts, given A's figure.
	minChange func(a float64) float64
}

func relative(a float64) float64 { return math.Abs(a) * compareMinRel }

func completedOnly(f func(r *protocol.RequestRecord) float64) func(r *protocol.RequestRecord) (float64, bool) {
	return func(r *protocol.RequestRecord) (float64, bool) {
		if r.Error != "" {
			return 0, false
		}
		return f(r), true
	}
}

func metrics() []metric {
	return []metric{
		{key: "ttft_p50", label: "TTFT p50", unit: "s", value: completedOnly(func(r *protocol.RequestRecord) float64 { return r.TTFT }), stat: quantile(0.5), minChange: relative},
		{key: "ttft_p90", label: "TTFT p90", unit: "s", value: completedOnly(func(r *protocol.RequestRecord) float64 { return r.TTFT }), stat: quantile(0.9), minChange: relative},
		{key: "e2e_p50", label: "E2E p50", unit: "s", value: completedOnly(func(r *protocol.RequestRecord) float64 { return r.E2E }), stat: quantile(0.5), minChange: relative},
		{key: "tps_p50", label: "TPS p50", unit: "tok/s", higherIsBetter: true, stat: quantile(0.5), minChange: relative,
			// 0 is "not measurable" (nothing came after the first read), not a rate.
			value: func(r *protocol.RequestRecord) (float64, bool) { return r.TPS, r.Error == "" && r.TPS > 0 }},
		{key: "success", label: "success rate", unit: "%", higherIsBetter: true, stat: mean,
			// Percent, so that the mean is the success rate as shown.
			value: func(r *protocol.RequestRecord) (float64, bool) {
				if r.Error != "" {
					return 0, true
				}
				return 100, true
			},
			minChange: func(float64) float64 { return compareMinSuccess * 100 }},
	}
}

// quantile is the nearest-rank percentile, as protocol.Stats uses.
func quantile(p float64) func(sorted []float64) float64 {
	return func(s []float64) float64 {
		if len(s) == 0 {
			return 0
		}
		i := int(math.Ceil(p*float64(len(s)))) - 1
		return s[max(0, min(i, len(s)-1))]
	}
}

func mean(s []float64) float64 {
	if len(s) == 0 {
		return 0
	}
	t := 0.0
	for _, v := range s {
		t += v
	}
	return t / float64(len(s))
}

func compareCombo(ca, cb *protocol.Combination) ComboChange {
	out := ComboChange{ComboKey: ca.ComboKey, SearchA: ca.Search, SearchB: cb.Search}
	var changes []MetricChange
	for _, m := range metrics() {
		changes = append(changes, compareMetric(m, ca.Requests, cb.Requests))
	}
	if ca.Pacing != nil && cb.Pacing != nil {
		changes = append(changes, compareDropped(ca.Pacing, cb.Pacing))
	}
	worse, better, known := 0, 0, 0
	for _, mc := range changes {
		switch mc.Verdict {
		case VerdictWorse:
			worse++
		case VerdictBetter:
			better++
		}
		if mc.Verdict != VerdictUnknown {
			known++
		}
		out.Metrics = append(out.Metrics, mc)
	}
	out.Verdict = overall(worse, better, known)
	return out
}

// compareDropped sets B's dropped frames against A's, more being worse:
// each frame due is 100 when it was dropped and 0 when it was sent, so that
// the mean is the percent dropped and the test weighs the counts as the
// success rate's does.
func compareDropped(pa, pb *protocol.Pacing) MetricChange {
	frames := func(p *protocol.Pacing) []float64 {
		out := make([]float64, p.FramesDue)
		for i := range min(p.FramesDropped, p.FramesDue) {
			out[i] = 100
		}
		return out
	}
	m := metric{key: "dropped", label: "frames dropped", unit: "%", stat: mean,
		minChange: func(float64) float64 { return compareMinSuccess * 100 }}
	return compareValues(m, frames(pa), frames(pb))
}

func values(m metric, recs []protocol.RequestRecord) []float64 {
	var out []float64
	for i := range recs {
		if v, ok := m.value(&recs[i]); ok {
			out = append(out, v)
		}
	}
	return out
}

func compareMetric(m metric, ra, rb []protocol.RequestRecord) MetricChange {
	return compareValues(m, values(m, ra), values(m, rb))
}

// compareValues is the verdict rule on the two runs' values of one metric.
func compareValues(m metric, xa, xb []float64) MetricChange {
	slices.Sort(xa)
	slices.Sort(xb)
	mc := MetricChange{Metric: m.key, Label: m.label, Unit: m.unit, HigherIsBetter: m.higherIsBetter,
		NA: len(xa), NB: len(xb), Verdict: VerdictUnknown}
	if len(xa) < compareMinRequests || len(xb) < compareMinRequests {
		return mc
	}
	mc.A, mc.B = m.stat(xa), m.stat(xb)
	mc.Change = mc.B - mc.A
	if mc.A != 0 {
		mc.RelChange = mc.Change / mc.A
	}
	mc.P = mannWhitneyP(xa, xb)
	mc.Verdict = VerdictSame
	if mc.P < compareAlpha && math.Abs(mc.Change) >= m.minChange(mc.A) {
		if (mc.Change > 0) == m.higherIsBetter {
			mc.Verdict = VerdictBetter
		} else {
			mc.Verdict = VerdictWorse
		}
	}
	return mc
}

// mannWhitneyP is the two-sided p of the Mann-Whitney U test of xa and xb
// (both sorted): the normal approximation with the correction for ties and
// for continuity. All values equal gives 1.
func mannWhitneyP(xa, xb []float64) float64 {
	type obs struct {
		v float64
		b bool
	}
	all := make([]obs, 0, len(xa)+len(xb))
	for _, v := range xa {
		all = append(all, obs{v, false})
	}
	for _, v := range xb {
		all = append(all, obs{v, true})
	}
	slices.SortFunc(all, func(x, y obs) int { return cmp.Compare(x.v, y.v) })
	n := float64(len(all))
	na, nb := float64(len(xa)), float64(len(xb))
	rankB, ties := 0.0, 0.0
	for i := 0; i < len(all); {
		j := i
		for j < len(all) && all[j].v == all[i].v {
			j++
		}
		rank := float64(i+j+1) / 2 // ranks i+1..j, averaged
		for k := i; k < j; k++ {
			if all[k].b {
				rankB += rank
			}
		}
		t := float64(j - i)
		ties += t*t*t - t
		i = j
	}
	u := rankB - nb*(nb+1)/2
	mu := na * nb / 2
	variance := na * nb / 12 * ((n + 1) - ties/(n*(n-1)))
	if variance <= 0 {
		return 1
	}
	d := math.Max(0, math.Abs(u-mu)-0.5)
	return math.Erfc(d / math.Sqrt(variance) / math.Sqrt2)
}

// switchText is an optional switch of a workload as the comparison names it.
func switchText(v *bool) string {
	if v == nil {
		return "unset"
	}
	return fmt.Sprint(*v)
}
