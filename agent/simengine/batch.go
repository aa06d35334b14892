package simengine

import (
	"image"
	"math"
)

// demand is what a request asks of the device: its images, its prompt's
// tokens (text and images, as usage counts them), its text's tokens and
// the answer's length.
type demand struct {
	pixels       []int
	promptTokens int
	textTokens   int
	tokens       int
}

// jobCost is what a request costs the device when it runs alone: prefill
// work in seconds and the speed it writes its answer at, in tokens per
// second. On a data-center profile also its slowdown per other request
// running (slow) and its share of the KV cache (kv, 1: the whole cache).
type jobCost struct {
	work float64
	tps  float64
	slow float64
	kv   float64
}

// cameraPromptTokens is the text the camera figures were published with:
// a short question, whose reading is part of the fitted base cost. Text
// beyond it is read at the cost of image tokens (edge profiles).
const cameraPromptTokens = 256

// jobCost prices a request on the profile's device.
func (p Profile) jobCost(d demand) jobCost {
	if p.DC != nil {
		return p.DC.jobCost(d)
	}
	c := p.costs()
	work := c.prefill(d.pixels)
	if extra := d.textTokens - cameraPromptTokens; extra > 0 {
		work += float64(extra) * p.secondsPerToken(c)
	}
	return jobCost{work: work, tps: p.TPS}
}

// secondsPerToken is the prefill cost of one prompt token on an edge
// profile: the cost of the first 720p image over its tokens, the only
// prompt reading the camera figures calibrate.
func (p Profile) secondsPerToken(c costModel) float64 {
	tokens := p.imageTokens(image.Pt(1280, 720))
	if tokens < 1 {
		return 0
	}
	return c.c720 / float64(tokens)
}

// batchRates is the data-center engine's schedule (vLLM-style continuous
// batching with a KV cache of bounded size): requests enter the running
// set in arrival order while their KV shares fit in the cache (a request
// alone always runs), and every request of the set, reading its prompt or
// writing its answer, runs at 1/(1+slow·(R−1)) of its speed alone with R
// requests running. Alone a request so has exactly its published TTFT and
// ITL; with the cache full the request throughput is flat: the plateau
// the Max Throughput tables report.
func (m *model) batchRates() {
	used := 0.0
	for _, j := range m.decoding {
		used += j.cost.kv
	}
	running := len(m.decoding)
	var admitted []*job
	full := false
	for _, j := range m.prefillQ {
		j.pRate = 0
		// A request whose body is still read has no cost yet; the
		// server's clock holds meanwhile, so it waits without a place.
		if j.pending || full {
			continue
		}
		if running > 0 && used+j.cost.kv > 1+1e-9 {
			full = true // first come, first served: no one overtakes
			continue
		}
		used += j.cost.kv
		running++
		admitted = append(admitted, j)
	}
	r := float64(max(0, running-1))
	for _, j := range admitted {
		j.pRate = 1 / (1 + j.cost.slow*r)
	}
	for _, j := range m.decoding {
		j.rate = j.cost.tps * j.speed / (1 + j.cost.slow*r)
	}
}

// logDistance compares two lengths on the scale that matters for cost.
func logDistance(a, b float64) float64 {
	return math.Abs(math.Log(math.Max(1, a)) - math.Log(math.Max(1, b)))
}
