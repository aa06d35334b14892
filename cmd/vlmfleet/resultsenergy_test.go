package main

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/controller"
	"github.com/vlmfleet/vlmfleet/harness/labtest"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// A run's energy figures and idle power, with the samples it is computed
// from, and the power mode it was measured in survive `results import`
// into a controller and `results export`.
func TestResultsEnergySurvivesImportAndExport(t *testing.T) {
	l := labtest.Start(t, controller.Options{})
	env := map[string]string{"VLMFLEET_CONTROLLER": l.Ctl.HTTPURL(), "VLMFLEET_TOKEN": l.Ctl.APIToken()}
	doc := labtest.ResultDoc("run-e", "M")
	doc.Config.PowerMode = "MODE_30W"
	at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	w1, w2 := 4.25, 4.35
	doc.IdlePower = &protocol.IdlePower{Source: protocol.PowerSourceModuleInput, MeanPowerW: 4.3, WindowSec: 3,
		Series: []protocol.TelemetrySample{{Time: at, PowerW: &w1, Rails: map[string]float64{"VDD_IN": w1}}, {Time: at.Add(time.Second), PowerW: &w2}}}
	above := 10.7
	doc.Combinations[0].Energy = &protocol.Energy{Source: protocol.PowerSourceModuleInput, Samples: 8, MeanPowerW: 15,
		WindowSec: 8, JoulesPerAnswer: 15, AboveIdleJoulesPerAnswer: &above}
	if code, _, errOut := cliRun(t, env, "results", "import", writeJSONFile(t, t.TempDir(), "e.json", doc)); code != 0 {
		t.Fatalf("import: exit %d: %s", code, errOut)
	}
	code, out, errOut := cliRun(t, env, "results", "export", "--format", "json")
	var runs []protocol.Run
	if code != 0 || json.Unmarshal([]byte(out), &runs) != nil || len(runs) != 1 {
		t.Fatalf("export json: exit %d\n%s\n%s", code, out, errOut)
	}
	got := runs[0]
	if got.Config.PowerMode != "MODE_30W" {
		t.Errorf("power mode exported %q, imported MODE_30W", got.Config.PowerMode)
	}
	if !reflect.DeepEqual(got.IdlePower, doc.IdlePower) {
		t.Errorf("idle power exported %+v, imported %+v", got.IdlePower, doc.IdlePower)
	}
	c, ok := got.Combination(doc.Combinations[0].ComboKey)
	if !ok || !reflect.DeepEqual(c.Energy, doc.Combinations[0].Energy) {
		t.Errorf("energy exported %+v, imported %+v", c, doc.Combinations[0].Energy)
	}
	if c, ok := got.Combination(doc.Combinations[1].ComboKey); !ok || c.Energy != nil {
		t.Errorf("a combination without power samples exported with energy %+v", c)
	}
}
