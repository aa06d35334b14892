package main

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// profileGroup is the levels of one length pair at one image size: one
// line of each of the page's two tables.
type profileGroup struct {
	protocol.LengthPair
	protocol.Resolution
	format string
	levels []protocol.Combination
}

// profileGroups gathers a run's profile levels by length pair and image
// size, in the order the run measured them.
func profileGroups(run *protocol.Run) []*profileGroup {
	var out []*profileGroup
	for _, cb := range run.Combinations {
		p := cb.Profile
		if p == nil {
			continue
		}
		i := slices.IndexFunc(out, func(g *profileGroup) bool {
			return g.LengthPair == p.LengthPair && g.Resolution == p.Resolution && g.format == p.ImageFormat
		})
		if i < 0 {
			i = len(out)
			out = append(out, &profileGroup{LengthPair: p.LengthPair, Resolution: p.Resolution, format: p.ImageFormat})
		}
		out[i].levels = append(out[i].levels, cb)
	}
	return out
}

// level is the group's level at concurrency c, or the one the rule marked
// as its max-throughput point when c is 0.
func (g *profileGroup) level(c int) (protocol.Combination, bool) {
	i := slices.IndexFunc(g.levels, func(cb protocol.Combination) bool {
		if c == 0 {
			return cb.Profile.MaxThroughput
		}
		return cb.Profile.Concurrency == c
	})
	if i < 0 {
		return protocol.Combination{}, false
	}
	return g.levels[i], true
}

// writeProfileSummary prints a profile run as NVIDIA's page lays it out:
// a Min Latency table (concurrency 1: TTFT, ITL, request latency) and a
// Max Throughput table (the level the rule chose: its concurrency, ITL,
// request throughput), one line per length pair and image size, each
// with what qualifies its figures; then every level measured, and how
// the max-throughput level was chosen and OSL forced.
func writeProfileSummary(w io.Writer, run *protocol.Run) {
	writeProfileHeader(w, run)
	groups := profileGroups(run)
	if len(groups) == 0 {
		fmt.Fprintln(w, "No profile level was measured.")
		return
	}
	sim := ""
	if run.Simulated {
		sim = ", SIMULATED"
	}
	fmt.Fprintf(w, "\nMin Latency (concurrency 1)%s\n", sim)
	fmt.Fprintf(w, "  %7s %6s  %-15s %9s %8s %11s\n", "ISL", "OSL", "Image", "TTFT ms", "ITL ms", "Latency ms")
	for _, g := range groups {
		cb, ok := g.level(1)
		if !ok {
			fmt.Fprintf(w, "  %s  concurrency 1 not measured\n", g.identity())
			continue
		}
		p := cb.Profile
		fmt.Fprintf(w, "  %s %9s %8s %11s%s\n", g.identity(), msOrDash(cb, p.TTFTMs, 0), msOrDash(cb, p.ITLMs, 1),
			figure(cb, p.RequestLatencyMs, 0), profileNotes(cb))
	}
	fmt.Fprintf(w, "\nMax Throughput%s\n", sim)
	fmt.Fprintf(w, "  %7s %6s  %-15s %11s %8s %9s\n", "ISL", "OSL", "Image", "Concurrency", "ITL ms", "req/s")
	for _, g := range groups {
		cb, ok := g.level(0)
		if !ok {
			fmt.Fprintf(w, "  %s  no level chosen (none completed a request)\n", g.identity())
			continue
		}
		p := cb.Profile
		fmt.Fprintf(w, "  %s %11d %8s %9s%s\n", g.identity(), p.Concurrency, msOrDash(cb, p.ITLMs, 1),
			figure(cb, p.RequestThroughput, throughputDigits(p.RequestThroughput)), profileNotes(cb))
	}
	writeProfileLevels(w, groups)
	writeProfileRule(w, run, groups)
}

// writeProfileHeader names what was measured: the model and its
// precision, the GPU, its count and TP where known, the engine, and
// whether it was simulated.
func writeProfileHeader(w io.Writer, run *protocol.Run) {
	c := run.Config
	on := c.Device
	if c.GPU != "" {
		on = c.GPU
		if c.GPUCount > 0 {
			on += fmt.Sprintf(" x%d", c.GPUCount)
		}
	}
	if c.TP > 0 {
		on += fmt.Sprintf(", TP%d", c.TP)
	}
	model := c.Model
	if c.Quantization != "" {
		model += " " + c.Quantization
	}
	engine := c.Engine
	if run.Engine.Version != "" {
		engine += " " + run.Engine.Version
	}
	fmt.Fprintf(w, "\n%s on %s (%s at %s), %s", model, on, engine, run.Engine.Endpoint, run.Status)
	if run.Simulated {
		fmt.Fprintf(w, ", SIMULATED engine (%gx real time; times scaled back)", max(run.SimSpeedup, 1))
	}
	fmt.Fprintln(w)
	stream := "streamed"
	if p := run.Workload.Profile; p != nil && p.NoStream {
		stream = "not streamed: request latency and throughput only"
	}
	fmt.Fprintf(w, "Latency and throughput profile, %s; figures by genai-perf's definitions (docs/profiles.md)\n", stream)
}

// identity is a table line's ISL, OSL and image ("-" for an ISL of 0:
// the prompt was sent as written, not sized).
func (g *profileGroup) identity() string {
	isl := "-"
	if g.ISL > 0 {
		isl = strconv.Itoa(g.ISL)
	}
	return fmt.Sprintf("%7s %6d  %-15s", isl, g.OSL, g.Resolution.String()+" "+g.format)
}

// writeProfileLevels lists every level measured, the max-throughput one
// marked, so that the saturation the rule read can be seen.
func writeProfileLevels(w io.Writer, groups []*profileGroup) {
	fmt.Fprintf(w, "\nEvery level (* the Max Throughput one)\n")
	fmt.Fprintf(w, "  %7s %6s  %-15s %5s %5s %6s %9s %8s %11s %9s %10s\n",
		"ISL", "OSL", "Image", "Conc", "Done", "Failed", "TTFT ms", "ITL ms", "Latency ms", "req/s", "Out tok/s")
	for _, g := range groups {
		for _, cb := range g.levels {
			p := cb.Profile
			mark := ""
			if p.MaxThroughput {
				mark = " *"
			}
			fmt.Fprintf(w, "  %s %5d %5d %6d %9s %8s %11s %9s %10s%s\n", g.identity(), p.Concurrency, cb.Completed, cb.Failed,
				msOrDash(cb, p.TTFTMs, 0), msOrDash(cb, p.ITLMs, 1), figure(cb, p.RequestLatencyMs, 0),
				figure(cb, p.RequestThroughput, throughputDigits(p.RequestThroughput)), figure(cb, p.OutputTokensPerSec, 1), mark)
			for _, e := range cb.Errors {
				fmt.Fprintf(w, "      %dx %s\n", e.Count, e.Error)
			}
		}
	}
}

// writeProfileRule says how the Max Throughput level was chosen and how
// OSL was forced, then the run's warnings.
func writeProfileRule(w io.Writer, run *protocol.Run, groups []*profileGroup) {
	if p := run.Workload.Profile; p != nil && p.Auto() {
		fmt.Fprintf(w, "\nMax Throughput, --concurrency auto up to %d: %s.\n", p.AutoCeiling, protocol.ProfileAutoRule)
	} else if p != nil {
		fmt.Fprintf(w, "\nMax Throughput: of the levels listed (%s), the one the run marked.\n", protocol.JoinInts(p.Levels()))
	}
	var forced, dropped []string
	for _, g := range groups {
		for _, cb := range g.levels {
			forced = appendNew(forced, cb.Profile.ForcedBy...)
			dropped = appendNew(dropped, cb.Profile.SwitchesDropped...)
		}
	}
	if len(forced) > 0 {
		fmt.Fprintf(w, "OSL forced with %s.\n", strings.Join(forced, ", "))
	} else {
		fmt.Fprintln(w, "OSL not forced: the engine has no switch for it, so an answer may stop short (see \"OSL not held\").")
	}
	if len(dropped) > 0 {
		fmt.Fprintf(w, "The server refused %s (HTTP 400); those levels were measured without.\n", strings.Join(dropped, ", "))
	}
	for _, warning := range run.Warnings {
		fmt.Fprintf(w, "Warning: %s\n", warning)
	}
}

// profileNotes qualifies a table line's figures: an OSL not held, what
// the image added to the prompt's tokens (or that they were estimated),
// failed requests.
func profileNotes(cb protocol.Combination) string {
	p := cb.Profile
	var notes []string
	if cb.Completed == 0 {
		notes = append(notes, "every request failed")
	} else if !p.OSLHeld {
		notes = append(notes, fmt.Sprintf("OSL not held (mean %.0f)", p.OSLMean))
	}
	switch {
	case p.ISL > 0 && p.TextTokensEstimated:
		notes = append(notes, "ISL estimated: the server reported no usage, one token a word")
	case p.ISL > 0 && cb.Images == 1:
		notes = append(notes, fmt.Sprintf("ISL = text tokens; the image added %d", p.ImageTokens))
	case p.ISL > 0 && cb.Images > 1:
		notes = append(notes, fmt.Sprintf("ISL = text tokens; the %d images added %d", cb.Images, p.ImageTokens))
	case p.ISL > 0:
		notes = append(notes, fmt.Sprintf("ISL = text tokens; the template added %d", p.ImageTokens))
	}
	if cb.Failed > 0 && cb.Completed > 0 {
		notes = append(notes, fmt.Sprintf("%d failed", cb.Failed))
	}
	if len(notes) == 0 {
		return ""
	}
	return "  " + strings.Join(notes, "; ")
}

// msOrDash is a figure the level may not have (TTFT and ITL of a level
// not streamed), "-" also when no request completed.
func msOrDash(cb protocol.Combination, v *float64, digits int) string {
	if v == nil || cb.Completed == 0 {
		return "-"
	}
	return strconv.FormatFloat(*v, 'f', digits, 64)
}

// figure is a level's figure, "-" when no request completed.
func figure(cb protocol.Combination, v float64, digits int) string {
	if cb.Completed == 0 {
		return "-"
	}
	return strconv.FormatFloat(v, 'f', digits, 64)
}

// throughputDigits keeps two significant digits of a slow level's
// requests per second (0.024), two decimals otherwise, as the page.
func throughputDigits(v float64) int {
	if v > 0 && v < 0.1 {
		return 3
	}
	return 2
}

func appendNew(list []string, items ...string) []string {
	for _, s := range items {
		if !slices.Contains(list, s) {
			list = append(list, s)
		}
	}
	return list
}
