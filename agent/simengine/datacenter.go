package simengine

import (
	"fmt"
	"math"
	"strings"
)

// DataCenter is the fitted timing of one data-center configuration (model,
// GPU, precision, tensor-parallel size) of NVIDIA's published vision NIM
// tables (explorer/profiles), served by the batched schedule of batch.go.
// docs/profiles.md says how it is fitted.
type DataCenter struct {
	// GPU is the accelerator as the tables spell it; TP the tensor-parallel
	// size, which is also the number of GPUs; FromTP the published size
	// the figures were scaled from (TP itself when it is published).
	GPU    string
	TP     int
	FromTP int
	// ttft is the prefill time alone, in seconds, by prompt tokens; itl
	// the time per answer token alone, in seconds, by prompt tokens.
	ttft, itl curve
	// lines are the fitted Max Throughput lines: how many requests like
	// each fill the KV cache, and how much each slows per other running.
	lines []dcLine
}

// curve is a + b·n + c·n², n in prompt tokens, from lo up; below lo,
// where no line was published and a fitted a may be negative, it falls
// linearly to 0 at no tokens.
type curve struct{ a, b, c, lo float64 }

func (q curve) at(n float64) float64 {
	if n < q.lo {
		return q.at(q.lo) * math.Max(0, n) / q.lo
	}
	return q.a + q.b*n + q.c*n*n
}

func (q curve) scaled(f float64) curve { return curve{q.a * f, q.b * f, q.c * f, q.lo} }

// dcLine is one Max Throughput line fitted: requests of promptTokens and
// osl fill the KV cache seqs at a time, each slowed by slow per other
// request running.
type dcLine struct {
	promptTokens, osl int
	seqs              float64
	slow              float64
}

// jobCost prices a request from the fitted curves and the line nearest in
// lengths; its KV share grows with its context, so that longer requests
// fill the cache with fewer of them.
func (d *DataCenter) jobCost(dm demand) jobCost {
	// A request always reads something, so that its prefill takes time.
	n := math.Max(1, float64(dm.promptTokens))
	c := jobCost{work: d.ttft.at(n), tps: 1 / d.itl.at(n)}
	if len(d.lines) == 0 {
		return c
	}
	best := d.lines[0]
	bestD := math.Inf(1)
	for _, l := range d.lines {
		dist := logDistance(n, float64(l.promptTokens)) + logDistance(float64(dm.tokens), float64(l.osl))
		if dist < bestD {
			best, bestD = l, dist
		}
	}
	c.slow = best.slow
	c.kv = float64(dm.promptTokens+dm.tokens) / (float64(best.promptTokens+best.osl) * (best.seqs + kvSpare))
	return c
}

// kvSpare is the room the KV cache has beyond its fitted requests, in
// requests of the line's lengths. A client's prompt is never exactly the
// published one (its own chat text, an ISL calibrated within 1 %): a
// cache of exactly seqs requests would hold one fewer of a prompt a few
// tokens longer, and at a cache of two or four that empty place costs
// the plateau 20 to 45 %. Half a request keeps seqs of them up to
// 1/(2·seqs) longer, and one more only of requests shorter by more than
// 1/(2·seqs+2).
const kvSpare = 0.5

// dcGPUMemoryGB is each data-center GPU's memory, by the tables' spelling.
func dcGPUMemoryGB(gpu string) (float64, bool) {
	switch strings.ToUpper(gpu) {
	case "H100-HBM3-80GB", "H100-SXM-80GB", "A100-SXM4-80GB", "A100-SXM-80GB":
		return 80, true
	case "L40S":
		return 48, true
	case "A10G":
		return 24, true
	}
	return 0, false
}

// IsDataCenterGPU says whether a device name is one of the simulated
// data-center GPUs.
func IsDataCenterGPU(device string) bool {
	_, ok := dcGPUMemoryGB(device)
	return ok
}

// dcParamsB is each data-center model's size in billions of parameters.
func dcParamsB(model string) float64 {
	m := strings.ToLower(model)
	switch {
	case strings.Contains(m, "90b"):
		return 88.6
	case strings.Contains(m, "11b"):
		return 10.7
	case strings.Contains(m, "nemoretriever-parse"):
		return 0.9
	}
	return 0
}

// bytesPerParam is a precision's weight size.
func bytesPerParam(precision string) float64 {
	if strings.Contains(strings.ToUpper(precision), "FP8") {
		return 1
	}
	return 2
}

// kvGB is what is left of TP GPUs' memory for the KV cache once the
// weights are loaded, at vLLM's default utilisation of 0.9.
func kvGB(model, gpu, precision string, tp int) float64 {
	mem, _ := dcGPUMemoryGB(gpu)
	return 0.9*mem*float64(tp) - dcParamsB(model)*bytesPerParam(precision)
}

// minTP is the smallest power-of-two tensor-parallel size whose GPUs hold
// the weights with room for a KV cache.
func minTP(model, gpu, precision string) int {
	tp := 1
	for tp < 64 && kvGB(model, gpu, precision, tp) < 0.1*dcParamsB(model)*bytesPerParam(precision) {
		tp *= 2
	}
	return tp
}

// withTP scales a published configuration to another tensor-parallel
// size: times by (tp/from)^-½ (the published TP1→TP2 and TP4→TP8 steps
// gain about 0.7 each at long inputs) and the KV cache by the memory left
// for it.
func (d DataCenter) withTP(model, precision string, tp int) DataCenter {
	out := d
	out.TP, out.FromTP = tp, d.TP
	f := math.Pow(float64(tp)/float64(d.TP), -0.5)
	out.ttft, out.itl = d.ttft.scaled(f), d.itl.scaled(f)
	kv := kvGB(model, d.GPU, precision, tp) / kvGB(model, d.GPU, precision, d.TP)
	out.lines = make([]dcLine, len(d.lines))
	for i, l := range d.lines {
		l.seqs = math.Max(1, l.seqs*kv)
		out.lines[i] = l
	}
	return out
}

// lookupDataCenter finds a data-center profile; tp 0 means 1. A TP that
// is not published is scaled from the nearest one published (withTP); one
// whose GPUs cannot hold the model is refused, naming the smallest that can.
func lookupDataCenter(device, model, precision, engine string, tp int) (Profile, error) {
	all, err := DataCenterProfiles()
	if err != nil {
		return Profile{}, err
	}
	if tp <= 0 {
		tp = 1
	}
	var near *Profile
	var choices []string
	for i, p := range all {
		if !strings.EqualFold(p.Device, device) || !strings.EqualFold(p.Model, model) {
			continue
		}
		choices = append(choices, fmt.Sprintf("%s TP%d", p.Quantization, p.DC.TP))
		if precision != "" && !strings.EqualFold(p.Quantization, precision) {
			continue
		}
		if engine != "" && normEngine(p.Engine) != normEngine(engine) {
			continue
		}
		if p.DC.TP == tp {
			return p, nil
		}
		if near == nil || logDistance(float64(tp), float64(p.DC.TP)) < logDistance(float64(tp), float64(near.DC.TP)) {
			near = &all[i]
		}
	}
	if near == nil {
		return Profile{}, fmt.Errorf("simulated %s on %s: no profile with precision %q engine %q; have: %s (or the model's other GPUs)",
			model, device, precision, engine, strings.Join(choices, "; "))
	}
	if need := minTP(near.Model, near.Device, near.Quantization); tp < need {
		return Profile{}, fmt.Errorf("tensor_parallel_size %d: %s in %s needs at least %d %s GPUs",
			tp, near.Model, near.Quantization, need, near.Device)
	}
	p := *near
	dc := near.DC.withTP(p.Model, p.Quantization, tp)
	p.DC = &dc
	return p, nil
}
