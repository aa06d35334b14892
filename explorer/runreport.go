package explorer

import (
	"encoding/csv"
	"fmt"
	"io"
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
// its figures and errors (a level found by search marked so, and each
// back-to-back level's load beside it), then Max Cameras under the
// judgement per image size and frame clock, with the load it read.
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
		if cb.Paced() {
			continue // in writePacedSummary's sections
		}
		if cb.Completed == 0 {
			fmt.Fprintf(w, "%-6s %4d %4d %5d %6d %10s %10s %8s %10s%s\n", cb.Size, cb.Images, cb.Cameras,
				cb.Completed, cb.Failed, "-", "-", "-", "-", searchMark(cb)+loadMark(cb))
		} else {
			// No request had tokens after its first one's read: the decode
			// rate is not measurable, which 0.0 would misstate.
			tps := "n/a"
			if cb.TPS.N > 0 {
				tps = strconv.FormatFloat(cb.TPS.Mean, 'f', 1, 64)
			}
			fmt.Fprintf(w, "%-6s %4d %4d %5d %6d %9.3fs %9.3fs %8s %10.1f%s\n", cb.Size, cb.Images, cb.Cameras,
				cb.Completed, cb.Failed, cb.TTFT.Mean, cb.TTFT.P90, tps, cb.OutputTokensPerSec, searchMark(cb)+loadMark(cb))
		}
		for _, e := range cb.Errors {
			fmt.Fprintf(w, "         %dx %s\n", e.Count, e.Error)
		}
	}
	for _, warning := range run.Warnings {
		fmt.Fprintf(w, "Warning: %s\n", warning)
	}
	writeRunEnergy(w, run)
	writeRunMaxCameras(w, run, j)
}

// searchMark marks a level that a search chose.
func searchMark(c protocol.Combination) string {
	if c.Search {
		return "  (search)"
	}
	return ""
}

// loadMark says how a back-to-back level's cameras sent: a sustained
// level with its measured rounds and its window.
func loadMark(c protocol.Combination) string {
	if c.Sustained() {
		return fmt.Sprintf("  sustained: %d rounds in a %.3g s window", c.Rounds, c.WindowSec)
	}
	return "  " + c.LoadName()
}

// maxCamerasLoad says which load Max Cameras at size read: sustained
// where any level there was, else one round per level, as published.
func maxCamerasLoad(points []Point, size string) string {
	if SustainedAt(points, size, 1, 0) {
		return "sustained"
	}
	return "one round, as published"
}

// writeRunMaxCameras prints Max Cameras under j for each size measured
// back to back with one image per request: exact where a search found it
// ("23"), "64+" where the search's ceiling passed. The levels on a frame
// clock follow in their own sections (writePacedSummary).
func writeRunMaxCameras(w io.Writer, run *protocol.Run, j protocol.Judgement) {
	points := RunPoints(run)
	fmt.Fprintf(w, "\nMax Cameras, one image per request, back to back: the most cameras measured with %s\n", j.Describe())
	for _, s := range protocol.ImageSizes() {
		if Measured(points, s.Name, 1) {
			fmt.Fprintf(w, "  %-6s %-4s (%s)\n", s.Name, MaxCamerasLabel(MaxCamerasJudged(points, s.Name, 1, 0, j)),
				maxCamerasLoad(points, s.Name))
		}
	}
	writePacedSummary(w, run, points, j)
}

// WriteRunCSV writes one line per combination of the run. The buyer's
// columns come last, so that a reader of the older columns by position
// still reads them: the frame interval (0 back to back), the search mark,
// a paced level's frames, the TTFT tail that p90 and p95 judge by
// (empty where it was not recorded), then what the level drew (empty
// where it has no power samples: 0 W would misstate it), the power
// setting the run measured in (runPower; empty when unknown), and last a
// back-to-back level's load ("burst" or "sustained") with a sustained
// level's rounds and window.
func WriteRunCSV(w io.Writer, run *protocol.Run) error {
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"model", "engine", "device", "size", "width", "height", "images", "cameras",
		"completed", "failed", "ttft_mean", "ttft_p50", "ttft_p90", "ttft_p99", "ttft_min", "ttft_max",
		"tps_mean", "tps_p50", "e2e_mean", "e2e_p90", "itl_mean", "ttfb_mean", "role_chunk_mean",
		"prompt_tokens_mean", "completion_tokens_mean", "output_tokens_per_sec", "max_in_flight", "wall_sec",
		"warmup", "errors",
		"frame_interval_sec", "search", "frames_due", "frames_sent", "frames_dropped",
		"ttft_tail_due", "ttft_tail_unstarted", "ttft_tail_p90", "ttft_tail_p95",
		"power_source", "mean_power_w", "power_window_sec", "joules_per_answer", "above_idle_joules_per_answer",
		"power_mode", "load", "rounds", "window_sec"})
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	for _, cb := range run.Combinations {
		var errs []string
		for _, e := range cb.Errors {
			errs = append(errs, fmt.Sprintf("%dx %s", e.Count, e.Error))
		}
		rec := []string{run.Config.Model, run.Config.Engine, run.Config.Device, cb.Size,
			strconv.Itoa(cb.Width), strconv.Itoa(cb.Height), strconv.Itoa(cb.Images), strconv.Itoa(cb.Cameras),
			strconv.Itoa(cb.Completed), strconv.Itoa(cb.Failed),
			f(cb.TTFT.Mean), f(cb.TTFT.P50), f(cb.TTFT.P90), f(cb.TTFT.P99), f(cb.TTFT.Min), f(cb.TTFT.Max),
			f(cb.TPS.Mean), f(cb.TPS.P50), f(cb.E2E.Mean), f(cb.E2E.P90), f(cb.ITL.Mean), f(cb.TTFB.Mean),
			f(cb.RoleChunk.Mean), f(cb.PromptTokens.Mean), f(cb.CompletionTokens.Mean), f(cb.OutputTokensPerSec),
			strconv.Itoa(cb.MaxInFlight), f(cb.WallSec), strconv.Itoa(cb.Warmup), strings.Join(errs, "; ")}
		rec = append(rec, buyerColumns(&cb)...)
		rec = append(rec, energyColumns(&cb)...)
		rec = append(rec, runPower(run))
		_ = cw.Write(append(rec, loadColumns(&cb)...))
	}
	cw.Flush()
	return cw.Error()
}

// buyerColumns are WriteRunCSV's last columns for one combination.
func buyerColumns(cb *protocol.Combination) []string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	out := []string{f(cb.FrameIntervalSec), strconv.FormatBool(cb.Search), "", "", "", "", "", "", ""}
	if p := cb.Pacing; p != nil {
		out[2], out[3], out[4] = strconv.Itoa(p.FramesDue), strconv.Itoa(p.FramesSent), strconv.Itoa(p.FramesDropped)
	}
	if t := cb.Tail; t != nil {
		out[5], out[6] = strconv.Itoa(t.Due), strconv.Itoa(t.Unstarted)
		// A percentile that fell on an answer that never started has no
		// figure; 0 would read as instant.
		if v, ok := t.At(90); ok {
			out[7] = f(v)
		}
		if v, ok := t.At(95); ok {
			out[8] = f(v)
		}
	}
	return out
}

// loadColumns are WriteRunCSV's load columns for one combination: empty
// on a frame clock.
func loadColumns(cb *protocol.Combination) []string {
	switch {
	case cb.Paced():
		return []string{"", "", ""}
	case cb.Sustained():
		return []string{protocol.LoadSustained, strconv.Itoa(cb.Rounds), strconv.FormatFloat(cb.WindowSec, 'f', -1, 64)}
	}
	return []string{protocol.LoadBurst, "", ""}
}

// energyColumns are WriteRunCSV's power columns for one combination. J per
// answer is left empty where no answer completed, as the explorer does.
func energyColumns(cb *protocol.Combination) []string {
	out := make([]string, 5)
	e := cb.Energy
	if e == nil || e.Samples < 1 {
		return out
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	out[0], out[1], out[2] = e.Source, f(e.MeanPowerW), f(e.WindowSec)
	if cb.Completed > 0 {
		out[3] = f(e.JoulesPerAnswer)
		if a := e.AboveIdleJoulesPerAnswer; a != nil {
			out[4] = f(*a)
		}
	}
	return out
}
