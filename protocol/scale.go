package protocol

// ScaleTime turns the times measured against a simulated engine that ran
// speedup times faster than the device back into the device's own time
// scale: durations are multiplied and rates divided by speedup. Only
// simulated runs are scaled, and such a run records the factor in
// Run.SimSpeedup. A speedup of 1 or less changes nothing. llama.cpp's
// timings are left as the engine reported them.
func (c *Combination) ScaleTime(speedup float64) {
	if speedup <= 1 {
		return
	}
	s := speedup
	for _, st := range []*Stats{&c.TTFT, &c.E2E, &c.ITL, &c.TTFB, &c.RoleChunk} {
		st.scale(s)
	}
	c.TPS.scale(1 / s)
	if c.Tail != nil {
		multiply(s, &c.Tail.P90, &c.Tail.P95)
	}
	c.OutputTokensPerSec /= s
	c.WallSec *= s
	for i := range c.Requests {
		r := &c.Requests[i]
		multiply(s, &r.Start, &r.TTFB, &r.RoleChunk, &r.TTFT, &r.LastToken, &r.E2E, &r.ITL)
		r.TPS /= s
	}
}

func (st *Stats) scale(s float64) {
	multiply(s, &st.Mean, &st.P50, &st.P90, &st.P99, &st.Min, &st.Max)
}

// multiply multiplies each of the figures by s.
func multiply(s float64, figures ...*float64) {
	for _, f := range figures {
		*f *= s
	}
}
