package profiles

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// Unknown stands for an identity field a run does not record (a run's
// precision, GPU or engine), so that its line is still shown, under a
// heading that says so.
const Unknown = "unknown"

// Measured is the measured lines of runs: for each completed run's
// profile levels (Combination.Profile), a Min Latency line from the level
// at concurrency 1 and a Max Throughput line from the level the rule
// marked (ProfileLevel.MaxThroughput), per (ISL, OSL, image). Of several
// lines of one identity (KeyOf) the newest run's stands: the run that
// finished last, ties by run id. The lines come oldest first, as Join
// wants them. A line that would not be a valid row is left out and its
// reason returned in skipped, naming the run.
func Measured(runs []protocol.Run) (rows []protocol.ProfileRow, skipped []error) {
	type candidate struct {
		row  protocol.ProfileRow
		when time.Time
		run  string
	}
	var all []candidate
	for i := range runs {
		r := &runs[i]
		if r.Status != protocol.RunCompleted {
			continue
		}
		for _, row := range runRows(r) {
			if err := row.Validate(); err != nil {
				skipped = append(skipped, fmt.Errorf("run %s, %s ISL %s OSL %d %dx%d: %w",
					r.ID, row.Profile, optInt(row.ISL), row.OSL, row.Width, row.Height, err))
				continue
			}
			all = append(all, candidate{row: row, when: finishedAt(r), run: r.ID})
		}
	}
	slices.SortStableFunc(all, func(a, b candidate) int {
		return cmp.Or(a.when.Compare(b.when), cmp.Compare(a.run, b.run))
	})
	newest := map[Key]int{}
	for i, c := range all {
		newest[KeyOf(c.row)] = i
	}
	rows = []protocol.ProfileRow{}
	for i, c := range all {
		if newest[KeyOf(c.row)] == i {
			rows = append(rows, c.row)
		}
	}
	return rows, skipped
}

// finishedAt is when a run finished, or when it was created if it has no
// finish time recorded.
func finishedAt(r *protocol.Run) time.Time {
	if !r.FinishedAt.IsZero() {
		return r.FinishedAt
	}
	return r.CreatedAt
}

// runRows is the lines of one run's profile levels, in the run's order.
func runRows(r *protocol.Run) []protocol.ProfileRow {
	base := identityRow(r)
	var out []protocol.ProfileRow
	for i := range r.Combinations {
		c := &r.Combinations[i]
		// A level that completed nothing has no figures to show.
		if c.Profile == nil || c.Completed == 0 {
			continue
		}
		if c.Profile.Concurrency == 1 {
			out = append(out, levelRow(base, r.ID, protocol.ProfileMinLatency, c.Profile))
		}
		if c.Profile.MaxThroughput {
			out = append(out, levelRow(base, r.ID, protocol.ProfileMaxThroughput, c.Profile))
		}
	}
	return out
}

// identityRow is what every line of r shares: what it was measured on.
// A run without a GPU count ran on as many GPUs as its device lists, and
// at least on its TP's.
func identityRow(r *protocol.Run) protocol.ProfileRow {
	cfg := r.Config
	row := protocol.ProfileRow{
		Model:     strings.TrimSpace(cfg.Model),
		GPU:       firstNonEmpty(cfg.GPU, firstGPU(r.Device.GPUs), cfg.Device, r.Device.Name, Unknown),
		Precision: firstNonEmpty(cfg.Quantization, Unknown),
		Engine:    firstNonEmpty(cfg.Engine, r.Engine.Name, r.Engine.Kind, Unknown),
		TP:        max(cfg.TP, 1),
		GPUCount:  cfg.GPUCount,
		Source:    protocol.ProfileSourceMeasured,
		Simulated: r.Simulated || r.Engine.Kind == protocol.EngineSim || r.Device.Kind == protocol.DeviceSimulated,
	}
	if row.GPUCount == 0 {
		row.GPUCount = len(r.Device.GPUs)
	}
	row.GPUCount = max(row.GPUCount, row.TP)
	return row
}

func firstGPU(gpus []protocol.GPUFacts) string {
	if len(gpus) == 0 {
		return ""
	}
	return gpus[0].Name
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s = strings.TrimSpace(s); s != "" {
			return s
		}
	}
	return ""
}

// levelRow is one level's figures as a line of table profile. Both tables
// carry every figure the level has: the table decides which it shows.
func levelRow(base protocol.ProfileRow, runID, profile string, l *protocol.ProfileLevel) protocol.ProfileRow {
	row := base
	row.Profile = profile
	if l.ISL > 0 {
		isl := l.ISL
		row.ISL = &isl
	}
	row.OSL, row.Width, row.Height, row.ImageFormat = l.OSL, l.Width, l.Height, l.ImageFormat
	conc := l.Concurrency
	row.Concurrency = &conc
	row.TTFTMs, row.ITLMs = copyFloat(l.TTFTMs), copyFloat(l.ITLMs)
	latency, tput, tokens := l.RequestLatencyMs, l.RequestThroughput, l.OutputTokensPerSec
	row.RequestLatencyMs, row.RequestThroughput, row.OutputTokensPerSec = &latency, &tput, &tokens
	held := l.OSLHeld
	row.OSLHeld = &held
	row.Note = levelNote(runID, row.Simulated, l)
	return row
}

func copyFloat(v *float64) *float64 {
	if v == nil {
		return nil
	}
	c := *v
	return &c
}

// levelNote says, for people, which run a line is from and what makes its
// figures other than the published ones': simulated, an answer length
// that was not held, switches the server refused, a text sized by words.
// It is cut to the row's bound on a note.
func levelNote(runID string, simulated bool, l *protocol.ProfileLevel) string {
	parts := []string{"run " + runID}
	if simulated {
		parts = append(parts, "SIMULATED")
	}
	if !l.OSLHeld {
		parts = append(parts, fmt.Sprintf("OSL not held (mean %.0f)", l.OSLMean))
	}
	if len(l.SwitchesDropped) > 0 {
		parts = append(parts, "refused: "+strings.Join(l.SwitchesDropped, ", "))
	}
	if l.TextTokensEstimated {
		parts = append(parts, "ISL estimated (no usage)")
	}
	note := strings.Join(parts, "; ")
	if len(note) > protocol.MaxProfileName {
		note = strings.ToValidUTF8(note[:protocol.MaxProfileName-3], "") + "..."
	}
	return note
}
