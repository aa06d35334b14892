package protocol

import (
	"fmt"
	"math"
)

// Pacing is what a combination measured on a frame clock recorded: each
// camera takes a frame every ComboKey.FrameIntervalSec seconds and sends it
// if its previous answer has finished, and otherwise skips it, as a live
// pipeline does rather than queueing frames that would be stale.
type Pacing struct {
	// FramesDue is every tick of every camera in the measured window;
	// FramesSent the frames sent and FramesDropped those skipped because
	// the camera's previous answer had not finished.
	FramesDue     int `json:"frames_due"`
	FramesSent    int `json:"frames_sent"`
	FramesDropped int `json:"frames_dropped"`
	// Age is the answered frames' age when their answer ended: from the
	// tick that took the frame to the answer's last token, seconds.
	Age Stats `json:"age"`
}

// MinPacedTicks is the fewest measured ticks a camera runs on a frame
// clock: with fewer, an answer slower than the interval might never meet
// a second tick and so never show as a drop.
const MinPacedTicks = 4

// MaxFrameIntervalSec bounds a frame interval: an hour between frames is
// no camera feed.
const MaxFrameIntervalSec = 3600

// PacedTicks is how many measured ticks each of cameras runs at one level
// of the workload: enough to share the level's requests, and at least
// MinPacedTicks.
func (w Workload) PacedTicks(cameras int) int {
	if cameras < 1 {
		cameras = 1
	}
	return max(MinPacedTicks, (w.RequestsPerLevel+cameras-1)/cameras)
}

// checkFrameInterval checks one frame interval.
func checkFrameInterval(field string, t float64) error {
	if math.IsNaN(t) || math.IsInf(t, 0) || t <= 0 || t > MaxFrameIntervalSec {
		return fmt.Errorf("%s: %g, want a positive number of seconds up to %d", field, t, MaxFrameIntervalSec)
	}
	return nil
}

// validateBuyerFigures checks the tail and the pacing's counts against
// the combination's.
func (c *Combination) validateBuyerFigures() error {
	const most = MaxRequestsInCombination
	if err := c.validateSustained(); err != nil {
		return err
	}
	if (c.Pacing != nil) != c.Paced() {
		return fmt.Errorf("pacing: recorded %t, but frame_interval_sec is %g", c.Pacing != nil, c.FrameIntervalSec)
	}
	if p := c.Pacing; p != nil {
		for _, n := range []struct {
			name string
			v    int
		}{{"frames_due", p.FramesDue}, {"frames_sent", p.FramesSent}, {"frames_dropped", p.FramesDropped}} {
			if err := checkCount("pacing."+n.name, n.v, most); err != nil {
				return err
			}
		}
		if p.FramesSent+p.FramesDropped != p.FramesDue {
			return fmt.Errorf("pacing: frames sent %d + dropped %d, but %d due", p.FramesSent, p.FramesDropped, p.FramesDue)
		}
		if p.FramesSent != c.Completed+c.Failed {
			return fmt.Errorf("pacing: frames sent %d, but completed %d + failed %d", p.FramesSent, c.Completed, c.Failed)
		}
		if err := p.Age.validate("pacing.age", c.Completed); err != nil {
			return err
		}
	}
	if e := c.Energy; e != nil {
		if err := e.validate(); err != nil {
			return err
		}
	}
	if t := c.Tail; t != nil {
		if err := checkCount("ttft_tail.due", t.Due, most); err != nil {
			return err
		}
		if t.Unstarted < 0 || t.Unstarted > t.Due {
			return fmt.Errorf("ttft_tail.unstarted: %d, want 0..%d (the answers due)", t.Unstarted, t.Due)
		}
		if err := checkFigure("ttft_tail.p90", t.P90); err != nil {
			return err
		}
		if err := checkFigure("ttft_tail.p95", t.P95); err != nil {
			return err
		}
	}
	return nil
}
