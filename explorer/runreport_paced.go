package explorer

import (
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// writePacedSummary prints a run's combinations on a frame clock, one
// section per interval: a line per camera level with its frames due, sent
// and dropped, the sent frames' TTFT, the answers' age and whether the
// level keeps up under j; then Max Cameras at that interval per size, read
// as the back-to-back answer is (the highest level that keeps up, "+" when
// that is the highest measured).
func writePacedSummary(w io.Writer, run *protocol.Run, points []Point, j protocol.Judgement) {
	var intervals []float64
	for _, cb := range run.Combinations {
		if cb.Paced() && cb.Pacing != nil && !slices.Contains(intervals, cb.FrameIntervalSec) {
			intervals = append(intervals, cb.FrameIntervalSec)
		}
	}
	for _, t := range intervals {
		fmt.Fprintf(w, "\nOne frame every %s s per camera (frames falling due while the camera's answer runs are dropped):\n",
			strconv.FormatFloat(t, 'g', -1, 64))
		fmt.Fprintf(w, "%-6s %4s %5s %5s %7s %6s %10s %10s %9s  %s\n", "Size", "Cams", "Due", "Sent", "Dropped", "Failed",
			"TTFT mean", "TTFT p90", "Age mean", "Keeps up")
		var sizes []string
		for _, cb := range run.Combinations {
			p := cb.Pacing
			if cb.FrameIntervalSec != t || p == nil {
				continue
			}
			keeps := j.Passes(cb.Figures())
			if !slices.Contains(sizes, cb.Size) {
				sizes = append(sizes, cb.Size)
			}
			fmt.Fprintf(w, "%-6s %4d %5d %5d %7d %6d %10s %10s %9s  %s\n", cb.Size, cb.Cameras, p.FramesDue, p.FramesSent,
				p.FramesDropped, cb.Failed, summarySeconds(cb.TTFT), summarySecondsAt(cb.TTFT.P90, cb.TTFT.N), summarySeconds(p.Age), keepsUpText(keeps))
			for _, e := range cb.Errors {
				fmt.Fprintf(w, "         %dx %s\n", e.Count, e.Error)
			}
		}
		for _, s := range sizes {
			fmt.Fprintf(w, "  Max Cameras at target %g s, %s: %s\n", j.Target(), s, MaxCamerasLabel(MaxCamerasJudged(points, s, 1, t, j)))
		}
	}
}

// summarySeconds is a statistic's mean as the summary prints times, "-"
// when nothing was measured.
func summarySeconds(st protocol.Stats) string { return summarySecondsAt(st.Mean, st.N) }

func summarySecondsAt(v float64, n int) string {
	if n == 0 {
		return "-"
	}
	return strconv.FormatFloat(v, 'f', 3, 64) + "s"
}

func keepsUpText(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
