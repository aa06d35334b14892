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
		a, b := m.submit(px, 4, 0), m.submit(px, 4, 0)
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
		jobs := []*job{m.submit(px, 2, 0), m.submit(px, 2, 0), m.submit(px, 2, 0), m.submit(px, 2, 0)}
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
		one := m.submit(nil, 100, 0)
		runUntilIdle(t, m)
		alone := one.doneAt - one.firstAt
		m2 := newModel(p, 0, 1)
		var many []*job
		for range 4 {
			many = append(many, m2.submit(nil, 100, 0))
		}
		runUntilIdle(t, m2)
		if d := many[3].doneAt - many[3].firstAt; d < 1.2*alone {
			t.Errorf("4 streams: last decoded in %.2fs, alone %.2fs", d, alone)
		}
	})
	t.Run("a removed request stops costing time", func(t *testing.T) {
		p := mustLookup(t, "Jetson AGX Orin", "Qwen3-VL-4B-Instruct", "Q8_0", "llama.cpp")
		m := newModel(p, 0, 1)
		a := m.submit(px, 4, 0)
		b := m.submit(px, 4, 0)
		m.advance(0.1, nil)
		m.remove(a)
		runUntilIdle(t, m)
		if want := 0.1 + b.prefill; math.Abs(b.firstAt-want) > 1e-6 {
			t.Errorf("after the first left at 0.1s the second started at %.3f, want %.3f", b.firstAt, want)
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
