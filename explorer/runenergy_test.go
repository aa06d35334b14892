package explorer

import (
	"bytes"
	"strings"
	"testing"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// The summary gives each combination's power and joules per answer above
// the idle power, and says "no power samples" where there were none.
func TestRunSummaryEnergy(t *testing.T) {
	above := 6.5
	run := &protocol.Run{
		Config:    protocol.Configuration{Model: "m", Device: "Jetson Orin NX", Engine: "vLLM"},
		IdlePower: &protocol.IdlePower{Source: protocol.PowerSourceModuleInput, MeanPowerW: 4.3, WindowSec: 3},
		Combinations: []protocol.Combination{
			{ComboKey: protocol.ComboKey{Size: "480p", Images: 1, Cameras: 1}, Completed: 4,
				Energy: &protocol.Energy{Source: protocol.PowerSourceModuleInput, Samples: 8, MeanPowerW: 15, WindowSec: 4,
					JoulesPerAnswer: 15, AboveIdleJoulesPerAnswer: &above}},
			{ComboKey: protocol.ComboKey{Size: "480p", Images: 1, Cameras: 2}, Completed: 4},
		},
	}
	var b bytes.Buffer
	WriteRunSummary(&b, run, protocol.Judgement{TargetSec: 1})
	out := b.String()
	for _, want := range []string{"Energy, from the Jetson module's input rail:", "idle 4.30 W over 3.0 s",
		"480p      1    1    15.00 W over 4.0 s, 15.00 J per answer (6.50 J above idle)", "480p      1    2  no power samples"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}

	run.IdlePower, run.Combinations[0].Energy = nil, nil
	b.Reset()
	WriteRunSummary(&b, run, protocol.Judgement{TargetSec: 1})
	if out := b.String(); !strings.Contains(out, "Energy: no power samples") || strings.Contains(out, " W over") {
		t.Errorf("a run without power samples:\n%s", out)
	}
}
