package explorer

import (
	"strings"
	"testing"

	"github.com/vlmfleet/vlmfleet/protocol"
)

func TestMaxCameras(t *testing.T) {
	combo := func(size string, images, cams int, ttft float64, failed int) protocol.Combination {
		c := protocol.Combination{ComboKey: protocol.ComboKey{Size: size, Images: images, Cameras: cams}, Completed: 4, Failed: failed}
		c.TTFT.Mean = ttft
		return c
	}
	combos := []protocol.Combination{
		combo("720p", 1, 1, 0.5, 0), combo("720p", 1, 2, 1.0, 0), combo("720p", 1, 4, 3.0, 0), combo("720p", 1, 8, 6, 0),
		combo("480p", 1, 1, 0.2, 0), combo("480p", 1, 2, 0.4, 0),
		combo("1080p", 1, 1, 4, 0), combo("1080p", 3, 1, 0.1, 0),
		combo("2K", 1, 1, 0.1, 0), combo("2K", 1, 2, 0.2, 1),
	}
	for _, c := range []struct {
		size       string
		target     float64
		best       int
		plus, meas bool
	}{
		{"720p", 3, 4, false, true}, // exactly on the target passes
		{"720p", 0.9, 1, false, true},
		{"720p", 10, 8, true, true},
		{"480p", 3, 2, true, true},
		{"1080p", 3, 0, false, true}, // the 3-image combination does not count
		// A failed request is left out of the mean and does not count
		// against the configuration (the seed's method).
		{"2K", 3, 2, true, true},
	} {
		run := protocol.Run{ID: "b1", Status: protocol.RunCompleted, Config: protocol.Configuration{Model: "m"}, Combinations: combos}
		points := RunPoints(&run)
		best, plus := MaxCameras(points, c.size, 1, c.target)
		meas := Measured(points, c.size, 1)
		if best != c.best || plus != c.plus || meas != c.meas {
			t.Errorf("%s at %g: got %d %v %v, want %d %v %v", c.size, c.target, best, plus, meas, c.best, c.plus, c.meas)
		}
	}
}

// A combination whose tokens all came in one burst has no decode rate: the
// summary says n/a, not 0.0. The run's warnings are printed.
func TestRunSummaryTPSNotMeasurableAndWarnings(t *testing.T) {
	run := protocol.Run{ID: "b1", Status: protocol.RunCompleted, Config: protocol.Configuration{Model: "m"},
		Warnings: []string{"the server has 1 slots"},
		Combinations: []protocol.Combination{
			{ComboKey: protocol.ComboKey{Size: "720p", Images: 1, Cameras: 1}, Completed: 4, TTFT: protocol.Stats{N: 4, Mean: 0.5}},
			{ComboKey: protocol.ComboKey{Size: "720p", Images: 1, Cameras: 2}, Completed: 4, TTFT: protocol.Stats{N: 4, Mean: 0.6},
				TPS: protocol.Stats{N: 4, Mean: 190.04}},
		}}
	var b strings.Builder
	WriteRunSummary(&b, &run, protocol.Judgement{})
	out := b.String()
	for _, want := range []string{"0.500s     0.000s      n/a", "190.0", "Warning: the server has 1 slots\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
}

// Max Cameras under a judgement reads the levels a search measured like
// the ladder's: "23" when 24 was measured and failed, "64+" when the
// ceiling kept up; by p90 a failed request counts against its level.
func TestRunSummaryMaxCamerasJudged(t *testing.T) {
	level := func(cams int, ttft float64, failed int, search bool) protocol.Combination {
		c := protocol.Combination{ComboKey: protocol.ComboKey{Size: "720p", Images: 1, Cameras: cams},
			Completed: cams, Failed: failed, TTFT: protocol.Stats{N: cams, Mean: ttft}, Search: search}
		ttfts := make([]float64, cams)
		for i := range ttfts {
			ttfts[i] = ttft
		}
		c.Tail = protocol.NewTTFTTail(ttfts, failed)
		return c
	}
	searched := []protocol.Combination{level(8, 1, 0, false), level(16, 2, 0, false), level(32, 5, 0, true),
		level(24, 3.01, 0, true), level(20, 2.5, 0, true), level(22, 2.8, 0, true), level(23, 3, 3, true)}
	ceiling := []protocol.Combination{level(16, 1, 0, false), level(32, 2, 0, true), level(64, 2.9, 0, true)}
	for _, tc := range []struct {
		name   string
		combos []protocol.Combination
		j      protocol.Judgement
		want   string
	}{
		{"search found the exact figure", searched, protocol.Judgement{}, "  720p   23   (one round, as published)\n"},
		{"by p90 the failures of 23 count", searched, protocol.Judgement{Statistic: protocol.StatisticP90}, "  720p   22   (one round, as published)\n"},
		{"a tighter target", searched, protocol.Judgement{TargetSec: 2.5}, "  720p   20   (one round, as published)\n"},
		{"the ceiling kept up", ceiling, protocol.Judgement{}, "  720p   64+  (one round, as published)\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := protocol.Run{ID: "b1", Status: protocol.RunCompleted, Config: protocol.Configuration{Model: "m"}, Combinations: tc.combos}
			var b strings.Builder
			WriteRunSummary(&b, &run, tc.j)
			out := b.String()
			if !strings.Contains(out, tc.want) || !strings.Contains(out, tc.j.Describe()) {
				t.Errorf("summary lacks %q or %q:\n%s", tc.want, tc.j.Describe(), out)
			}
		})
	}
}
