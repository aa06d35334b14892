package protocol

import "testing"

// A paced combination against a simulator that ran 10 times faster reads
// its answers' age and its TTFT tail on the device's scale, and keeps its
// frame interval (given in the device's time) and its counts.
func TestScaleTimeScalesPacingAndTail(t *testing.T) {
	c := Combination{
		ComboKey: ComboKey{Size: "720p", Images: 1, Cameras: 2, FrameIntervalSec: 5},
		TTFT:     Stats{N: 2, Mean: 0.1},
		Pacing:   &Pacing{FramesDue: 4, FramesSent: 2, FramesDropped: 2, Age: Stats{N: 2, Mean: 0.3, Max: 0.4}},
		Tail:     NewTTFTTail([]float64{0.1, 0.2}, 0),
	}
	c.ScaleTime(10)
	if c.TTFT.Mean != 1 || c.Pacing.Age.Mean != 3 || c.Pacing.Age.Max != 4 || c.Tail.P90 != 2 || c.Tail.P95 != 2 {
		t.Errorf("scaled: TTFT %g, age %+v, tail %+v", c.TTFT.Mean, c.Pacing.Age, c.Tail)
	}
	if c.FrameIntervalSec != 5 || c.Pacing.FramesDue != 4 || c.Pacing.FramesDropped != 2 || c.Tail.Due != 2 {
		t.Errorf("scaling changed what is not a time: %+v, %+v, %+v", c.ComboKey, c.Pacing, c.Tail)
	}
}

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

// A simulated combination's energy is read on the device's scale: the
// device draws its watts for speedup times as long.
func TestScaleTimeScalesEnergyButNotPower(t *testing.T) {
	above := 2.0
	c := Combination{Energy: &Energy{Source: PowerSourceSimulated, Samples: 3, MeanPowerW: 15, WindowSec: 1,
		JoulesPerAnswer: 5, AboveIdleJoulesPerAnswer: &above}}
	c.ScaleTime(10)
	if e := c.Energy; e.MeanPowerW != 15 || e.WindowSec != 10 || e.JoulesPerAnswer != 50 || *e.AboveIdleJoulesPerAnswer != 20 || e.Samples != 3 {
		t.Errorf("scaled by 10: %+v (above idle %g); want 15 W over 10 s, 50 J and 20 J per answer", *e, *e.AboveIdleJoulesPerAnswer)
	}
}

// A profile level's times are on the device's scale too, and its rates.
func TestScaleTimeScalesAProfileLevel(t *testing.T) {
	ttft, itl := 20.0, 2.0
	c := Combination{Profile: &ProfileLevel{TTFTMs: &ttft, ITLMs: &itl, RequestLatencyMs: 100,
		RequestThroughput: 50, OutputTokensPerSec: 500}}
	c.ScaleTime(10)
	p := c.Profile
	if *p.TTFTMs != 200 || *p.ITLMs != 20 || p.RequestLatencyMs != 1000 || p.RequestThroughput != 5 || p.OutputTokensPerSec != 50 {
		t.Errorf("scaled profile: TTFT %v, ITL %v, latency %v, throughput %v, tokens/s %v",
			*p.TTFTMs, *p.ITLMs, p.RequestLatencyMs, p.RequestThroughput, p.OutputTokensPerSec)
	}
	c = Combination{Profile: &ProfileLevel{RequestLatencyMs: 100}}
	c.ScaleTime(10) // not streamed: no TTFT, no ITL
	if c.Profile.TTFTMs != nil || c.Profile.RequestLatencyMs != 1000 {
		t.Errorf("not streamed: TTFT %v, latency %v", c.Profile.TTFTMs, c.Profile.RequestLatencyMs)
	}
}
