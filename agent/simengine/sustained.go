package simengine

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// openCamera is one camera of runOpenLoop: when it sends next (+Inf
// while its answer runs or once it is done), how many requests it has
// sent, how many of them were measured, and whether its last was sent.
type openCamera struct {
	due            float64
	sent, measured int
	last           bool
}

// runOpenLoop runs a sustained level through m in virtual time, as the
// load generator measures one (agent/loadgen/sustained.go): each camera
// sends its warm-up requests and its ramp, then keeps sending; a request
// is measured when sent after every camera's ramp ended and before every
// camera has its rounds; each camera then sends one last request. It
// returns the measured requests once every request has ended.
func runOpenLoop(m *model, gaps *rand.Rand, sw Sweep, pixels []int) ([]*job, error) {
	gap := func() float64 { return sw.Gap * gaps.Float64() }
	rounds := protocol.SustainedRounds(sw.Cameras, sw.Requests)
	ramp := sw.Warmup + 1
	cams := make([]openCamera, sw.Cameras)
	for c := range cams {
		cams[c].due = m.now + gap()
	}
	owner := map[*job]int{}
	measured := map[*job]bool{}
	var done []*job
	ramped, short := 0, sw.Cameras
	for {
		t := m.nextEvent(false)
		for _, c := range cams {
			t = math.Min(t, c.due)
		}
		if math.IsInf(t, 1) {
			if len(owner) == 0 {
				return done, nil
			}
			return nil, fmt.Errorf("model stalled with %d requests in flight", len(owner))
		}
		m.advance(t, func(j *job) {
			if j.phase != phaseDone {
				return
			}
			c := &cams[owner[j]]
			delete(owner, j)
			if measured[j] {
				done = append(done, j)
			}
			if c.sent == ramp {
				ramped++
			}
			if !c.last {
				c.due = m.now + gap()
			}
		})
		for ci := range cams {
			c := &cams[ci]
			if c.due > m.now {
				continue
			}
			c.due = math.Inf(1)
			j := m.submit(pixels, sw.MaxTokens)
			owner[j] = ci
			c.sent++
			switch {
			case ramped < sw.Cameras || c.sent <= ramp:
			case short > 0:
				measured[j] = true
				c.measured++
				if c.measured == rounds {
					short--
				}
			default:
				c.last = true
			}
		}
	}
}
