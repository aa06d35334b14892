package protocol

import "testing"

// A simulated run's tail is judged on the device's scale, like its mean:
// a tail left on the simulator's would pass a percentile the device fails.
func TestScaleTimeScalesTheTail(t *testing.T) {
	c := Combination{TTFT: Stats{Mean: 0.1}, Tail: &TTFTTail{Due: 10, Unstarted: 1, P90: 0.2, P95: 0.3}}
	c.ScaleTime(10)
	if c.TTFT.Mean != 1 || c.Tail.P90 != 2 || c.Tail.P95 != 3 || c.Tail.Due != 10 || c.Tail.Unstarted != 1 {
		t.Errorf("scaled by 10: mean %g, tail %+v; want 1 s and p90 2 s, p95 3 s, counts kept", c.TTFT.Mean, *c.Tail)
	}
	bare := Combination{}
	bare.ScaleTime(10) // no tail: nothing to scale, and no panic
}
