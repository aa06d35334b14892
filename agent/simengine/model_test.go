package simengine

import (
	"math"
	"testing"
)

// runUntilIdle advances the model event by event until nothing is left.
func runUntilIdle(t *testing.T, m *model) {
	t.Helper()
	for range 10000 {
		next := m.nextEvent(false)
		if math.IsInf(next, 1) {
			return
		}
		m.advance(next, nil)
	}
	t.Fatal("model did not go idle")
}

func TestModelQueues(t *testing.T) {
	px := []int{pixels720}
	t.Run("llama.cpp on a Jetson serves prefill first come first served", func(t *testing.T) {
		p := mustLookup(t, "Jetson AGX Orin", "Qwen3-VL-4B-Instruct", "Q8_0", "llama.cpp")
		m := newModel(p, 0, 1)
		a, b := m.submit(px, 4), m.submit(px, 4)
		runUntilIdle(t, m)
		// With no contention the second waits exactly for the first.
		if math.Abs(b.firstAt-a.firstAt-b.prefill) > 1e-6 {
			t.Errorf("first tokens at %.3f and %.3f, second prefill %.3f", a.firstAt, b.firstAt, b.prefill)
		}
		if a.phase != phaseDone || b.phase != phaseDone || a.due() != 4 {
			t.Errorf("jobs not done: %+v %+v", a, b)
		}
	})
	t.Run("vLLM batches prefill", func(t *testing.T) {
		p := mustLookup(t, "RTX PRO 6000", "Qwen3-VL-4B-Instruct", "BF16", "vLLM")
		m := newModel(p, 0, 1)
		jobs := []*job{m.submit(px, 2), m.submit(px, 2), m.submit(px, 2), m.submit(px, 2)}
		runUntilIdle(t, m)
		alone := p.costs().prefill(px)
		for i, j := range jobs {
			// Four together at 1+0.7·3 = 3.1× speed: each about 4/3.1 of alone.
			if r := j.firstAt / alone; r < 1.2 || r > 1.4 {
				t.Errorf("job %d first token at %.3fs, %.2f× alone", i, j.firstAt, r)
			}
		}
	})
	t.Run("decoding streams slow each other", func(t *testing.T) {
		p := mustLookup(t, "Jetson Orin NX", "Gemma-4-E2B-it", "", "")
		m := newModel(p, 0, 1)
		one := m.submit(nil, 100)
		runUntilIdle(t, m)
		alone := one.doneAt - one.firstAt
		m2 := newModel(p, 0, 1)
		var many []*job
		for range 4 {
			many = append(many, m2.submit(nil, 100))
		}
		runUntilIdle(t, m2)
		if d := many[3].doneAt - many[3].firstAt; d < 1.2*alone {
			t.Errorf("4 streams: last decoded in %.2fs, alone %.2fs", d, alone)
		}
	})
	t.Run("a removed request stops costing time", func(t *testing.T) {
		p := mustLookup(t, "Jetson AGX Orin", "Qwen3-VL-4B-Instruct", "Q8_0", "llama.cpp")
		m := newModel(p, 0, 1)
		a := m.submit(px, 4)
		b := m.submit(px, 4)
		m.advance(0.1, nil)
		m.remove(a)
		runUntilIdle(t, m)
		if want := 0.1 + b.prefill; math.Abs(b.firstAt-want) > 1e-6 {
			t.Errorf("after the first left at 0.1s the second started at %.3f, want %.3f", b.firstAt, want)
		}
	})
}

// TestModelSharesDevice checks the concurrency the model promises for every
// profile at its fitted contention and at the bounds of the fit: a request
// arriving while others decode is slowed, never made to wait for their
// answers, and the answers keep being written while it is read.
func TestModelSharesDevice(t *testing.T) {
	px := []int{pixels720}
	lo, hi := contentionRange()
	for _, p := range Profiles() {
		for _, c := range []float64{p.Contention, lo, hi} {
			if c < lo || c > hi {
				t.Errorf("%s: contention %.4f outside the fitted range [%g, %g]", p.Key(), c, lo, hi)
			}
			m := newModel(p, c, 1)
			const streams = 7
			var decoding []*job
			for range streams {
				decoding = append(decoding, m.submit(nil, 100000))
			}
			for m.nextEvent(false) < math.Inf(1) && len(m.prefillQ) > 0 {
				m.advance(m.nextEvent(false), nil)
			}
			before := decoding[0].progress
			start := m.now
			j := m.submit(px, 2)
			for j.firstAt < 0 {
				m.advance(m.nextEvent(false), nil)
			}
			ttft := j.firstAt - start
			// The seven streams weigh at most hi·(1+decodeK·6) against it.
			bound := j.prefill * (1 + hi*(1+knobsFor(p).decodeK*(streams-1)))
			if ttft > bound*(1+1e-9) {
				t.Errorf("%s c=%.3f: TTFT %.3fs beside %d streams, over the bound %.3fs", p.Key(), c, ttft, streams, bound)
			}
			if ttft < j.prefill*(1+1e-9) {
				t.Errorf("%s c=%.3f: TTFT %.3fs beside %d streams, no slower than alone (%.3fs)", p.Key(), c, ttft, streams, j.prefill)
			}
			if wrote := decoding[0].progress - before; wrote < 0.02*ttft*p.TPS/(1+knobsFor(p).decodeK*streams) {
				t.Errorf("%s c=%.3f: a stream wrote %.2f tokens during a %.3fs prefill", p.Key(), c, wrote, ttft)
			}
		}
	}
}

// TestModelReserve checks that a request reserved on arrival keeps its
// place and is credited with the time its body took to parse.
func TestModelReserve(t *testing.T) {
	px := []int{pixels720}
	p := mustLookup(t, "Jetson AGX Orin", "Qwen3-VL-4B-Instruct", "Q8_0", "llama.cpp")
	t.Run("parsing does not add to the response time", func(t *testing.T) {
		m := newModel(p, p.Contention, 1)
		a := m.reserve()
		m.advance(0.2, nil) // parsing, 5 ms at a speedup of 40
		m.fill(a, px, 4)
		runUntilIdle(t, m)
		if math.Abs(a.firstAt-a.prefill) > 1e-6 {
			t.Errorf("first token at %.4fs, want %.4fs as if known on arrival", a.firstAt, a.prefill)
		}
	})
	t.Run("parsing slower than the prefill", func(t *testing.T) {
		m := newModel(p, p.Contention, 1)
		a := m.reserve()
		m.advance(2, nil)
		m.fill(a, px, 128)
		if math.Abs(a.firstAt-a.prefill) > 1e-6 || a.phase != phaseDecode {
			t.Errorf("first token at %.4fs (%v), want %.4fs as if known on arrival", a.firstAt, a.phase, a.prefill)
		}
		runUntilIdle(t, m)
		if tps := float64(a.tokens-1) / (a.doneAt - a.firstAt); math.Abs(tps/p.TPS-1) > 0.02 {
			t.Errorf("wrote %.1f tok/s, want about %.1f", tps, p.TPS)
		}
	})
	t.Run("a request parsed later keeps its place", func(t *testing.T) {
		m := newModel(p, p.Contention, 1)
		a := m.reserve()
		b := m.submit(px, 4)
		m.advance(0.1, nil)
		m.fill(a, px, 4)
		runUntilIdle(t, m)
		if a.firstAt >= b.firstAt {
			t.Errorf("first arrived answered at %.3fs, after the second at %.3fs", a.firstAt, b.firstAt)
		}
	})
	t.Run("a pending request never finishes", func(t *testing.T) {
		m := newModel(p, p.Contention, 1)
		a := m.reserve()
		if next := m.nextEvent(true); !math.IsInf(next, 1) {
			t.Errorf("next event %.3f with only a pending request", next)
		}
		m.advance(100, nil)
		if a.firstAt >= 0 || a.phase != phasePrefill {
			t.Errorf("pending request moved on: %+v", a)
		}
		m.remove(a)
		if len(m.prefillQ) != 0 {
			t.Errorf("removed request still queued")
		}
	})
}

func TestCostModel(t *testing.T) {
	p := mustLookup(t, "Jetson Orin NX", "Qwen3-VL-4B-Instruct", "FP8", "vLLM")
	c := p.costs()
	for _, tc := range []struct {
		pixels []int
		want   float64
	}{
		{[]int{pixels720}, 1.67},
		{[]int{pixels720, pixels720, pixels720}, 4},
		{[]int{1920 * 1080}, 4.34},
	} {
		if got := c.prefill(tc.pixels); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("prefill(%v) = %.4f, want the seed's %.2f", tc.pixels, got, tc.want)
		}
	}
	if c.prefill(nil) >= c.prefill([]int{854 * 480}) {
		t.Error("an image costs nothing")
	}
}
