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
	WriteRunSummary(&b, &run, 3)
	out := b.String()
	for _, want := range []string{"0.500s     0.000s      n/a", "190.0", "Warning: the server has 1 slots\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
}
