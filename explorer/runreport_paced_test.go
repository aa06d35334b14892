package explorer

import (
	"strings"
	"testing"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// A run's paced combinations get a section per interval with their frame
// counts and whether each level keeps up, out of the back-to-back table
// whose rows they would repeat: a level that dropped a frame does not keep
// up, however fast its answers began.
func TestRunSummaryShowsPacedLevels(t *testing.T) {
	paced := func(cams, due, dropped int, ttft float64) protocol.Combination {
		sent := due - dropped
		return protocol.Combination{ComboKey: protocol.ComboKey{Size: "720p", Images: 1, Cameras: cams, FrameIntervalSec: 5},
			Completed: sent, TTFT: protocol.Stats{N: sent, Mean: ttft, P90: ttft},
			Pacing: &protocol.Pacing{FramesDue: due, FramesSent: sent, FramesDropped: dropped, Age: protocol.Stats{N: sent, Mean: 2 * ttft}}}
	}
	run := protocol.Run{ID: "b1", Status: protocol.RunCompleted, Config: protocol.Configuration{Model: "m"},
		Combinations: []protocol.Combination{
			{ComboKey: protocol.ComboKey{Size: "720p", Images: 1, Cameras: 1}, Completed: 8, TTFT: protocol.Stats{N: 8, Mean: 0.5}},
			{ComboKey: protocol.ComboKey{Size: "720p", Images: 1, Cameras: 2}, Completed: 8, TTFT: protocol.Stats{N: 8, Mean: 4}},
			paced(1, 8, 0, 0.5), paced(2, 8, 0, 0.6), paced(4, 8, 1, 0.7),
		}}
	var b strings.Builder
	WriteRunSummary(&b, &run, protocol.Judgement{TargetSec: 3})
	out := b.String()
	table, pacedPart, ok := strings.Cut(out, "One frame every 5 s per camera")
	if !ok {
		t.Fatalf("no section for the 5 s interval:\n%s", out)
	}
	if strings.Count(table, "\n720p ") != 2 {
		t.Errorf("the back-to-back table shows other than its 2 levels:\n%s", table)
	}
	for _, want := range []string{
		"720p      1     8     8       0      0     0.500s     0.500s    1.000s  yes",
		"720p      4     8     7       1      0     0.700s     0.700s    1.400s  no",
		"Max Cameras at target 3 s, 720p: 2\n",
	} {
		if !strings.Contains(pacedPart, want) {
			t.Errorf("the paced section lacks %q:\n%s", want, pacedPart)
		}
	}
	if !strings.Contains(table, "720p   1    (one round, as published)\n") {
		t.Errorf("back to back Max Cameras is not 1:\n%s", table)
	}
}
