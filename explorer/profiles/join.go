package profiles

import (
	"slices"
	"strings"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// Key is a line's identity: the table it is in and what it was measured
// on. A measured line reproduces the published line of the same Key.
// Names compare without regard to case or surrounding spaces, and a
// GPU's as gpuIdentity says: nvidia-smi's name is the tables' GPU.
type Key struct {
	Model, GPU, Precision string
	TP                    int
	Profile               string
	// ISL is 0 where the line has none.
	ISL, OSL      int
	Width, Height int
	ImageFormat   string
}

// KeyOf is r's identity.
func KeyOf(r protocol.ProfileRow) Key {
	k := Key{
		Model: fold(r.Model), GPU: gpuIdentity(r.GPU), Precision: fold(r.Precision), TP: r.TP, Profile: r.Profile,
		OSL: r.OSL, Width: r.Width, Height: r.Height, ImageFormat: fold(r.ImageFormat),
	}
	if r.ISL != nil {
		k.ISL = *r.ISL
	}
	return k
}

func fold(s string) string { return strings.ToLower(strings.TrimSpace(s)) }

// Line is one table line: the published figures and the measured ones of
// the same identity; either may be missing.
type Line struct {
	Key       Key
	Published *protocol.ProfileRow
	Measured  *protocol.ProfileRow
}

// Join sets each measured line beside the published line of the same
// identity. The lines come in the published order, then the measured
// lines no page publishes, in their order. Of several measured lines of
// one identity the last one given stands: the caller lists them oldest
// first. A measured line's GPU is spelled as the published lines spell it
// (gpuSpellings), so that it stands under their heading and a reader's
// join by name finds them.
func Join(published, measured []protocol.ProfileRow) []Line {
	spellings := spellingsOf(published)
	measured = slices.Clone(measured)
	for i := range measured {
		measured[i].GPU = spellings.spell(measured[i])
	}
	var lines []Line
	at := map[Key]int{}
	for i := range published {
		k := KeyOf(published[i])
		if _, dup := at[k]; dup {
			continue
		}
		at[k] = len(lines)
		lines = append(lines, Line{Key: k, Published: &published[i]})
	}
	for i := range measured {
		k := KeyOf(measured[i])
		j, ok := at[k]
		if !ok {
			j = len(lines)
			at[k] = j
			lines = append(lines, Line{Key: k})
		}
		lines[j].Measured = &measured[i]
	}
	return lines
}

// Rows is the lines as rows: each line's published row, then its
// measured one.
func Rows(lines []Line) []protocol.ProfileRow {
	out := []protocol.ProfileRow{}
	for _, l := range lines {
		if l.Published != nil {
			out = append(out, *l.Published)
		}
		if l.Measured != nil {
			out = append(out, *l.Measured)
		}
	}
	return out
}

// Diff is a measured line against the published one, each figure in
// percent of the published figure: +10 is 10 % more (a slower latency, a
// higher throughput). nil where either line lacks the figure or the
// published one is 0.
type Diff struct {
	TTFT               *float64 `json:"ttft_pct"`
	ITL                *float64 `json:"itl_pct"`
	RequestLatency     *float64 `json:"request_latency_pct"`
	RequestThroughput  *float64 `json:"request_throughput_pct"`
	OutputTokensPerSec *float64 `json:"output_tokens_per_sec_pct"`
}

// Diff is the measured line against the published one; all nil unless
// the line has both.
func (l Line) Diff() Diff {
	if l.Published == nil || l.Measured == nil {
		return Diff{}
	}
	p, m := l.Published, l.Measured
	return Diff{
		TTFT:               pct(m.TTFTMs, p.TTFTMs),
		ITL:                pct(m.ITLMs, p.ITLMs),
		RequestLatency:     pct(m.RequestLatencyMs, p.RequestLatencyMs),
		RequestThroughput:  pct(m.RequestThroughput, p.RequestThroughput),
		OutputTokensPerSec: pct(m.OutputTokensPerSec, p.OutputTokensPerSec),
	}
}

func pct(measured, published *float64) *float64 {
	if measured == nil || published == nil || *published == 0 {
		return nil
	}
	d := (*measured - *published) / *published * 100
	return &d
}
