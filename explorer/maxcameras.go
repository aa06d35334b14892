package explorer

import (
	"math"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// Rules of Max Cameras, shared with the page (explorer/web) through
// testdata/maxcameras_vectors.json; both implementations must pass every vector.
//
//   - Only points at the selected image size and images per camera count.
//   - A level passes when at least one request completed and its mean TTFT,
//     rounded to the 0.01 s the page shows, is at most the target: a response
//     time exactly on the target passes, and "3 s" on screen never fails a 3 s
//     target. A level where every request failed was tested and fails.
//   - Max Cameras is the highest measured number of cameras that passes, even
//     when a lower number failed (the seed: "the highest measured number of
//     cameras at which the response time meets your target"; measurements are
//     shown as they are, never smoothed).
//   - plus is true when that number is the highest tested, so the real limit
//     was not reached.
//   - 0 when none passes, and 0 when the size and image count were not measured
//     at all (the page hides such rows instead of showing 0).
//   - Nothing is interpolated. With 3 or 5 images per camera the method
//     measures one camera only, so Max Cameras is then at most 1.

// RoundSeconds rounds a response time to the 0.01 s it is shown with.
func RoundSeconds(s float64) float64 { return math.Round(s*100) / 100 }

// Passes reports whether p meets target (seconds) under the rules above.
func Passes(p Point, target float64) bool {
	return p.Completed > 0 && RoundSeconds(p.TTFT) <= target
}

// MaxCameras is the highest measured number of cameras at size and images
// whose response time meets target; plus when it is the highest number tested.
func MaxCameras(points []Point, size string, images int, target float64) (max int, plus bool) {
	highest := 0
	for _, p := range points {
		if p.Size != size || p.Images != images {
			continue
		}
		if p.Cameras > highest {
			highest = p.Cameras
		}
		if Passes(p, target) && p.Cameras > max {
			max = p.Cameras
		}
	}
	return max, max > 0 && max == highest
}

// Level is one measured camera level as a judgement reads it.
type Level struct {
	Cameras int
	Figures protocol.LevelFigures
}

// MaxCamerasJudged is Max Cameras under a judgement, by the rules above
// with the judgement's statistic and target in place of the mean's: the
// highest measured level that passes j, plus when it is the highest
// measured. Under the mean it is MaxCameras; under p90/p95 a level whose
// tail is unknown does not pass.
func MaxCamerasJudged(levels []Level, j protocol.Judgement) (best int, plus bool) {
	highest := 0
	for _, l := range levels {
		highest = max(highest, l.Cameras)
		if l.Cameras > best && j.Passes(l.Figures) {
			best = l.Cameras
		}
	}
	return best, best > 0 && best == highest
}

// Measured reports whether any point exists at size and images (any number of
// cameras); rows that were not are hidden rather than shown with 0.
func Measured(points []Point, size string, images int) bool {
	for _, p := range points {
		if p.Size == size && p.Images == images {
			return true
		}
	}
	return false
}

// FindPoint returns the point at (size, images, cameras).
func FindPoint(points []Point, size string, images, cameras int) (Point, bool) {
	for _, p := range points {
		if p.Size == size && p.Images == images && p.Cameras == cameras {
			return p, true
		}
	}
	return Point{}, false
}

// MaxCamerasLabel writes Max Cameras as the page does: "8+", "2", "0".
func MaxCamerasLabel(max int, plus bool) string {
	s := itoa(max)
	if plus {
		s += "+"
	}
	return s
}
