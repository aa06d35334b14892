package simengine

import (
	"math"
	"testing"
)

// A camera takes the first tick at or after its answer's end: a tick that
// falls exactly as the answer ends is taken, one a moment before is
// dropped, and after the last tick there is none (ticks).
func TestFrameLoopNextTick(t *testing.T) {
	l := &frameLoop{ticks: 4, interval: 1, start: 10, cams: make([]frameCam, 2)}
	for _, c := range []struct {
		cam, tick int
		end       float64
		want      int
	}{
		{0, 0, 10.3, 1},  // within the interval: the next tick
		{1, 0, 11.5, 1},  // camera 1's tick 1 falls at 11.5, as the answer ends
		{1, 0, 11.51, 2}, // a moment later: tick 1 dropped
		{0, 1, 12.2, 3},  // tick 2 (at 12) fell while the answer ran
		{0, 2, 14.5, 4},  // past the last tick: done
	} {
		if got := l.nextTick(c.cam, c.tick, c.end); got != c.want {
			t.Errorf("camera %d, tick %d ending at %g: next tick %d, want %d", c.cam, c.tick, c.end, got, c.want)
		}
	}
}

// A request reserved for a time to come joins the queue then, and its
// response time counts from then: early is not slower.
func TestModelReserveAt(t *testing.T) {
	p := mustLookup(t, "Jetson AGX Orin", "Qwen3-VL-4B-Instruct", "Q8_0", "llama.cpp")
	m := newModel(p, p.Contention, 1)
	a := m.reserveAt(2)
	m.fill(a, []int{pixels720}, 4)
	if next := m.nextEvent(false); next != 2 {
		t.Errorf("next event at %g, want the arrival at 2", next)
	}
	m.advance(1, nil)
	if len(m.prefillQ) != 0 || a.firstAt >= 0 {
		t.Errorf("the request started before its time: queue %d, first token at %g", len(m.prefillQ), a.firstAt)
	}
	runUntilIdle(t, m)
	if a.arrive != 2 || math.Abs(a.firstAt-2-a.prefill) > 1e-6 {
		t.Errorf("arrived at %g, first token at %.4f; want 2 and %.4f", a.arrive, a.firstAt, 2+a.prefill)
	}
	late := m.reserveAt(m.now - 1)
	if late.arrive != m.now || len(m.prefillQ) != 1 {
		t.Errorf("a request whose time has passed arrived at %g (now %g), queue %d", late.arrive, m.now, len(m.prefillQ))
	}
}
