package simengine

import (
	"fmt"
	"math"
)

// LevelFigures are a profile level's figures by genai-perf's definitions,
// in simulated seconds and requests per second.
type LevelFigures struct {
	TTFT, ITL, Latency float64
	Throughput         float64
}

// SimulateLevel runs a profile level through the profile's model in
// virtual time: concurrency clients start together and each sends its
// next request as its answer ends, requests in all, every one of
// promptTokens (text and image, as usage counts them) asking for osl
// tokens with the length forced. TTFT, ITL = (latency − TTFT)/(OSL − 1)
// and latency are means; throughput is the requests over the span from
// the first request's start to the last answer's end. Deterministic for a
// seed and instant: what the HTTP server does for the same requests when
// its clock is held by their loop (clock.go).
func SimulateLevel(p Profile, promptTokens, osl, concurrency, requests int, seed uint64) (LevelFigures, error) {
	if concurrency < 1 || requests < 1 || osl < 1 || promptTokens < 1 {
		return LevelFigures{}, fmt.Errorf("simulate level: concurrency %d, requests %d, osl %d, prompt tokens %d: want positive",
			concurrency, requests, osl, promptTokens)
	}
	m := newModel(p, p.Contention, seed)
	d := demand{promptTokens: promptTokens, textTokens: promptTokens, tokens: osl}
	sent := 0
	send := func() {
		m.fillDemand(m.reserve(), d)
		sent++
	}
	for sent < min(concurrency, requests) {
		send()
	}
	var done []*job
	for len(done) < requests {
		t := m.nextEvent(false)
		if math.IsInf(t, 1) {
			return LevelFigures{}, fmt.Errorf("simulate level: model stalled after %d of %d requests", len(done), requests)
		}
		ended := 0
		m.advance(t, func(j *job) {
			if j.phase == phaseDone {
				done = append(done, j)
				ended++
			}
		})
		for ; ended > 0 && sent < requests; ended-- {
			send()
		}
	}
	return levelFigures(done), nil
}

func levelFigures(done []*job) LevelFigures {
	var f LevelFigures
	first, last := math.Inf(1), math.Inf(-1)
	for _, j := range done {
		f.TTFT += j.firstAt - j.arrive
		f.Latency += j.doneAt - j.arrive
		if j.tokens > 1 {
			f.ITL += (j.doneAt - j.firstAt) / float64(j.tokens-1)
		}
		first, last = math.Min(first, j.arrive), math.Max(last, j.doneAt)
	}
	n := float64(len(done))
	f.TTFT, f.Latency, f.ITL = f.TTFT/n, f.Latency/n, f.ITL/n
	if last > first {
		f.Throughput = n / (last - first)
	}
	return f
}
