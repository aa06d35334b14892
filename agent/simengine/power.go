package simengine

import "math"

// WithGPUSlowdown is the profile on a device whose GPU-bound work takes s
// times as long as when the profile was published: a Jetson in a lower
// nvpmodel mode, a GPU under a lower power limit (agent/devicefacts says
// by how much). Every delay of the timing model comes from the prefill
// figures and the decode speed, so scaling them scales prefill, the first
// token and each decoded token by s; the contention, a ratio of the two,
// is unchanged, and so a whole sweep runs s times slower. The published
// Max Cameras readings and load points belong to the published mode and
// are dropped. An s that is not a finite number above 1 leaves the
// profile as it is.
func (p Profile) WithGPUSlowdown(s float64) Profile {
	if !(s > 1) || math.IsInf(s, 0) {
		return p
	}
	p.TTFT720 *= s
	p.TTFTMulti *= s
	p.TTFTBig *= s
	p.TPS /= s
	p.Targets, p.LoadPoints = nil, nil
	if p.DC != nil {
		dc := *p.DC
		dc.ttft, dc.itl = dc.ttft.scaled(s), dc.itl.scaled(s)
		p.DC = &dc
	}
	return p
}
