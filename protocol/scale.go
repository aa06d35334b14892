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
	c.OutputTokensPerSec /= s
	c.WallSec *= s
	c.WindowSec *= s
	if c.Pacing != nil {
		c.Pacing.Age.scale(s)
	}
	if t := c.Tail; t != nil {
		multiply(s, &t.P90, &t.P95)
	}
	if e := c.Energy; e != nil {
		// The device draws the power for speedup times as long: its
		// window and its joules grow, its watts do not.
		multiply(s, &e.WindowSec, &e.JoulesPerAnswer)
		if e.AboveIdleJoulesPerAnswer != nil {
			multiply(s, e.AboveIdleJoulesPerAnswer)
		}
	}
	if p := c.Profile; p != nil {
		for _, f := range []*float64{p.TTFTMs, p.ITLMs, &p.RequestLatencyMs} {
			if f != nil {
				*f *= s
			}
		}
		p.RequestThroughput /= s
		p.OutputTokensPerSec /= s
	}
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
