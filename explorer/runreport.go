package explorer

import (
	"encoding/csv"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// RunPoints turns one run into the explorer's points, so that a single run
// (a bench) and the explorer compute Max Cameras with one rule.
func RunPoints(run *protocol.Run) []Point {
	ds := Aggregate([]protocol.Run{*run}, time.Now())
	for _, r := range ds.Rows {
		if r.Run.ID == run.ID {
			return r.Points
		}
	}
	return nil
}

// WriteRunSummary prints a run for a terminal: a line per combination with
// its figures and errors (a level found by search marked so), then Max
// Cameras under the judgement per image size and frame clock.
func WriteRunSummary(w io.Writer, run *protocol.Run, j protocol.Judgement) {
	fmt.Fprintf(w, "\n%s on %s (%s", run.Config.Model, run.Config.Device, run.Config.Engine)
	if run.Engine.Version != "" {
		fmt.Fprintf(w, " %s", run.Engine.Version)
	}
	fmt.Fprintf(w, " at %s), %s", run.Engine.Endpoint, run.Status)
	if run.Simulated {
		fmt.Fprintf(w, ", SIMULATED engine (%gx real time; times scaled back)", max(run.SimSpeedup, 1))
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "%-6s %4s %4s %5s %6s %10s %10s %8s %10s\n", "Size", "Imgs", "Cams", "Done", "Failed", "TTFT mean", "TTFT p90", "TPS", "Out tok/s")
	for _, cb := range run.Combinations {
		if cb.Completed == 0 {
			fmt.Fprintf(w, "%-6s %4d %4d %5d %6d %10s %10s %8s %10s%s\n", cb.Size, cb.Images, cb.Cameras,
				cb.Completed, cb.Failed, "-", "-", "-", "-", searchMark(cb))
		} else {
			// No request had tokens after its first one's read: the decode
			// rate is not measurable, which 0.0 would misstate.
			tps := "n/a"
			if cb.TPS.N > 0 {
				tps = strconv.FormatFloat(cb.TPS.Mean, 'f', 1, 64)
			}
			fmt.Fprintf(w, "%-6s %4d %4d %5d %6d %9.3fs %9.3fs %8s %10.1f%s\n", cb.Size, cb.Images, cb.Cameras,
				cb.Completed, cb.Failed, cb.TTFT.Mean, cb.TTFT.P90, tps, cb.OutputTokensPerSec, searchMark(cb))
		}
		for _, e := range cb.Errors {
			fmt.Fprintf(w, "         %dx %s\n", e.Count, e.Error)
		}
	}
	for _, warning := range run.Warnings {
		fmt.Fprintf(w, "Warning: %s\n", warning)
	}
	writeRunMaxCameras(w, run, j)
}

// searchMark marks a level that a search chose.
func searchMark(c protocol.Combination) string {
	if c.Search {
		return "  (search)"
	}
	return ""
}

// writeRunMaxCameras prints Max Cameras under j for each size measured
// with one image per request, back to back and at each frame interval:
// exact where a search found it ("23"), "64+" where the search's ceiling
// passed.
func writeRunMaxCameras(w io.Writer, run *protocol.Run, j protocol.Judgement) {
	fmt.Fprintf(w, "\nMax Cameras, one image per request: the most cameras measured with %s\n", j.Describe())
	for _, s := range protocol.ImageSizes() {
		for _, interval := range runIntervals(run, s.Name) {
			label := s.Name
			if interval > 0 {
				label += " every " + strconv.FormatFloat(interval, 'g', -1, 64) + " s"
			}
			fmt.Fprintf(w, "  %-6s %s\n", label, MaxCamerasLabel(MaxCamerasJudged(RunLevels(run, s.Name, 1, interval), j)))
		}
	}
}

// runIntervals lists the frame clocks the run measured size on with one
// image per request, back to back (0) first.
func runIntervals(run *protocol.Run, size string) []float64 {
	var out []float64
	for _, c := range run.Combinations {
		if c.Size == size && c.Images == 1 && !slices.Contains(out, c.FrameIntervalSec) {
			out = append(out, c.FrameIntervalSec)
		}
	}
	slices.Sort(out)
	return out
}

// RunLevels is the run's measured levels at size, images and frame
// interval (0: back to back), as the explorer's points take them: a
// combination in which no request ran, or a repeated one, is left out.
func RunLevels(run *protocol.Run, size string, images int, interval float64) []Level {
	var out []Level
	seen := map[int]bool{}
	for i := range run.Combinations {
		c := &run.Combinations[i]
		if c.Size != size || c.Images != images || c.FrameIntervalSec != interval || c.Completed+c.Failed <= 0 || seen[c.Cameras] {
			continue
		}
		seen[c.Cameras] = true
		out = append(out, Level{Cameras: c.Cameras, Figures: c.Figures()})
	}
	return out
}

// WriteRunCSV writes one line per combination of the run.
func WriteRunCSV(w io.Writer, run *protocol.Run) error {
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"model", "engine", "device", "size", "width", "height", "images", "cameras",
		"completed", "failed", "ttft_mean", "ttft_p50", "ttft_p90", "ttft_p99", "ttft_min", "ttft_max",
		"tps_mean", "tps_p50", "e2e_mean", "e2e_p90", "itl_mean", "ttfb_mean", "role_chunk_mean",
		"prompt_tokens_mean", "completion_tokens_mean", "output_tokens_per_sec", "max_in_flight", "wall_sec",
		"warmup", "errors"})
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	for _, cb := range run.Combinations {
		var errs []string
		for _, e := range cb.Errors {
			errs = append(errs, fmt.Sprintf("%dx %s", e.Count, e.Error))
		}
		_ = cw.Write([]string{run.Config.Model, run.Config.Engine, run.Config.Device, cb.Size,
			strconv.Itoa(cb.Width), strconv.Itoa(cb.Height), strconv.Itoa(cb.Images), strconv.Itoa(cb.Cameras),
			strconv.Itoa(cb.Completed), strconv.Itoa(cb.Failed),
			f(cb.TTFT.Mean), f(cb.TTFT.P50), f(cb.TTFT.P90), f(cb.TTFT.P99), f(cb.TTFT.Min), f(cb.TTFT.Max),
			f(cb.TPS.Mean), f(cb.TPS.P50), f(cb.E2E.Mean), f(cb.E2E.P90), f(cb.ITL.Mean), f(cb.TTFB.Mean),
			f(cb.RoleChunk.Mean), f(cb.PromptTokens.Mean), f(cb.CompletionTokens.Mean), f(cb.OutputTokensPerSec),
			strconv.Itoa(cb.MaxInFlight), f(cb.WallSec), strconv.Itoa(cb.Warmup), strings.Join(errs, "; ")})
	}
	cw.Flush()
	return cw.Error()
}
