package explorer

import (
	"math"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// Rules of Max Cameras, shared with the page (explorer/web) through
// testdata/maxcameras_vectors.json; both implementations must pass every vector.
//
//   - Only points at the selected image size, images per camera and frame
//     interval count (0, back to back, as published): a paced level is
//     never read as a back-to-back one.
//   - A level passes by the judgement (protocol.Judgement.Passes): by the
//     mean (published), when at least one request completed and its mean
//     TTFT, rounded to the 0.01 s the page shows, is at most the target (a
//     response time exactly on the target passes, and "3 s" on screen
//     never fails a 3 s target; a level where every request failed was
//     tested and fails); by p90/p95, when that percentile over every
//     answer due, a failed request or dropped frame counted as never
//     started, meets the target. A paced level with a frame dropped or a
//     request failed fails under any statistic.
//   - Where any level at the selection was measured sustained (cameras
//     that keep sending, protocol/load.go), Max Cameras reads the
//     sustained levels alone: a level that kept up as one round may not
//     keep up all day, and a search brackets its answer on sustained
//     levels. Elsewhere it reads the levels as published, one round each.
//   - Max Cameras is the highest measured number of cameras that passes, even
//     when a lower number failed (the seed: "the highest measured number of
//     cameras at which the response time meets your target"; measurements are
//     shown as they are, never smoothed). A level a search chose counts as
//     any other measured level.
//   - plus is true when that number is the highest tested, so the real limit
//     was not reached. After a search the failing level above is measured
//     too, so the figure is exact; only at the search's ceiling is it "64+".
//   - 0 when none passes, and 0 when the size and image count were not measured
//     at all (the page hides such rows instead of showing 0).
//   - By p90/p95, a selection where a level has no tail (a published row
//     imported with its means only) is not judged: Judgeable is false, Max
//     Cameras 0, and the page says the statistic is not known rather than
//     pass or fail.
//   - Nothing is interpolated. With 3 or 5 images per camera the method
//     measures one camera only, so Max Cameras is then at most 1.

// RoundSeconds rounds a response time to the 0.01 s it is shown with.
func RoundSeconds(s float64) float64 { return math.Round(s*100) / 100 }

// Passes reports whether p meets target (seconds) under the rules above.
func Passes(p Point, target float64) bool {
	return p.Completed > 0 && RoundSeconds(p.TTFT) <= target
}

// pointAt says whether p is at (size, images, interval).
func pointAt(p Point, size string, images int, interval float64) bool {
	return p.Size == size && p.Images == images && p.FrameIntervalSec == interval
}

// SustainedAt says whether any level at (size, images, interval) was
// measured with cameras that keep sending: Max Cameras there reads those.
func SustainedAt(points []Point, size string, images int, interval float64) bool {
	for _, p := range points {
		if pointAt(p, size, images, interval) && p.Sustained() {
			return true
		}
	}
	return false
}

// judgedAt is whether a point is one of those Max Cameras at (size,
// images, interval) reads: the sustained ones where there are any, else
// all.
func judgedAt(points []Point, size string, images int, interval float64) func(Point) bool {
	sustained := SustainedAt(points, size, images, interval)
	return func(p Point) bool { return pointAt(p, size, images, interval) && (!sustained || p.Sustained()) }
}

// PassesJudged reports whether p keeps up under j.
func PassesJudged(p Point, j protocol.Judgement) bool { return j.Passes(p.Figures()) }

// MaxCameras is the highest measured number of cameras back to back at size
// and images whose mean response time meets target; plus when it is the
// highest number tested.
func MaxCameras(points []Point, size string, images int, target float64) (max int, plus bool) {
	return highestPassing(points, size, images, 0, func(p Point) bool { return Passes(p, target) })
}

// MaxCamerasJudged is Max Cameras at size, images and frame interval (0:
// back to back) under j: the highest measured number of cameras that keeps
// up, plus when it is the highest number tested. Where j cannot be judged
// (Judgeable) it is 0: no level is claimed to keep up.
func MaxCamerasJudged(points []Point, size string, images int, interval float64, j protocol.Judgement) (max int, plus bool) {
	if !Judgeable(points, size, images, interval, j) {
		return 0, false
	}
	return highestPassing(points, size, images, interval, func(p Point) bool { return PassesJudged(p, j) })
}

// highestPassing is the highest measured number of cameras at size,
// images and interval that passes, and whether it is the highest tested.
func highestPassing(points []Point, size string, images int, interval float64, passes func(Point) bool) (max int, plus bool) {
	highest := 0
	judged := judgedAt(points, size, images, interval)
	for _, p := range points {
		if !judged(p) {
			continue
		}
		if p.Cameras > highest {
			highest = p.Cameras
		}
		if p.Cameras > max && passes(p) {
			max = p.Cameras
		}
	}
	return max, max > 0 && max == highest
}

// Judgeable reports whether every level at size, images and interval
// carries what j's statistic reads: the mean always, a percentile only
// where the tail was recorded.
func Judgeable(points []Point, size string, images int, interval float64, j protocol.Judgement) bool {
	if j.Stat() == protocol.StatisticMean {
		return true
	}
	judged := judgedAt(points, size, images, interval)
	for _, p := range points {
		if judged(p) && p.Tail == nil {
			return false
		}
	}
	return true
}

// Searched reports whether a search chose any level at size, images and
// interval: Max Cameras there is exact, not bounded by the ladder.
func Searched(points []Point, size string, images int, interval float64) bool {
	judged := judgedAt(points, size, images, interval)
	for _, p := range points {
		if judged(p) && p.Search {
			return true
		}
	}
	return false
}

// Measured reports whether any back-to-back point exists at size and images
// (any number of cameras); rows that were not are hidden rather than shown
// with 0.
func Measured(points []Point, size string, images int) bool {
	return MeasuredAt(points, size, images, 0)
}

// MeasuredAt is Measured at a frame interval (0: back to back).
func MeasuredAt(points []Point, size string, images int, interval float64) bool {
	for _, p := range points {
		if pointAt(p, size, images, interval) {
			return true
		}
	}
	return false
}

// FindPoint returns the back-to-back point at (size, images, cameras).
func FindPoint(points []Point, size string, images, cameras int) (Point, bool) {
	return FindPointAt(points, size, images, cameras, 0)
}

// FindPointAt returns the point at (size, images, cameras, interval): the
// sustained one where the level was measured both ways, as Max Cameras
// reads it.
func FindPointAt(points []Point, size string, images, cameras int, interval float64) (Point, bool) {
	var found Point
	ok := false
	for _, p := range points {
		if pointAt(p, size, images, interval) && p.Cameras == cameras && (!ok || p.Sustained()) {
			found, ok = p, true
		}
	}
	return found, ok
}

// MaxCamerasLabel writes Max Cameras as the page does: "8+", "2", "0".
func MaxCamerasLabel(max int, plus bool) string {
	s := itoa(max)
	if plus {
		s += "+"
	}
	return s
}
