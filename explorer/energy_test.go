package explorer

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// powerRun is a completed run at 720p, one image, 1, 2 and 4 cameras, whose
// response time grows with the cameras (0.8 s a camera). energy gives each
// level's draw (nil: no power samples).
func powerRun(id, model string, energy func(cams int) *protocol.Energy) protocol.Run {
	r := protocol.Run{
		ID: id, Status: protocol.RunCompleted, Source: protocol.SourceLab,
		Config:     protocol.Configuration{Model: model, ParamsB: 4, Quantization: "Q8_0", Engine: "llama.cpp", Device: "Jetson AGX Orin"},
		CreatedAt:  time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC),
		FinishedAt: time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC),
	}
	for _, cams := range []int{1, 2, 4} {
		c := protocol.Combination{ComboKey: protocol.ComboKey{Size: "720p", Images: 1, Cameras: cams}, Completed: 8,
			TTFT: protocol.Stats{N: 8, Mean: 0.8 * float64(cams), P90: 0.9 * float64(cams)}, TPS: protocol.Stats{N: 8, Mean: 20},
			Energy: energy(cams)}
		r.Combinations = append(r.Combinations, c)
	}
	return r
}

func moduleEnergy(cams int) *protocol.Energy {
	above := 4.0 * float64(cams)
	return &protocol.Energy{Source: protocol.PowerSourceModuleInput, Samples: 40, MeanPowerW: 10 + 4.2*float64(cams),
		WindowSec: 20, JoulesPerAnswer: 9.6, AboveIdleJoulesPerAnswer: &above}
}

func TestRowViewHasThePowerAtMaxCameras(t *testing.T) {
	ds := Aggregate([]protocol.Run{
		powerRun("p", "Power-VL", moduleEnergy),
		powerRun("n", "NoPower-VL", func(int) *protocol.Energy { return nil }),
	}, time.Now())
	res := Select(ds, DefaultQuery())
	if len(res.Rows) != 2 {
		t.Fatalf("%d rows, want 2", len(res.Rows))
	}
	var with, without RowView
	for _, r := range res.Rows {
		if r.Model == "Power-VL" {
			with = r
		} else {
			without = r
		}
	}
	// Max Cameras at 3 s is 2 (1.6 s); 4 cameras (3.2 s) fail.
	if with.MaxCameras != 2 || with.PowerAtMaxW == nil || *with.PowerAtMaxW != 18.4 {
		t.Fatalf("Power-VL: Max %d, power %v, want 2 and 18.4 W (the level at Max Cameras, not the one selected)", with.MaxCameras, with.PowerAtMaxW)
	}
	if with.WattsPerCamera == nil || *with.WattsPerCamera != 9.2 || *with.JoulesAtMax != 9.6 || *with.AboveIdleAtMax != 8 || with.PowerSource != "module_input" {
		t.Errorf("Power-VL: W per camera %v, J %v, above idle %v, source %q; want 9.2, 9.6, 8, module_input",
			with.WattsPerCamera, with.JoulesAtMax, with.AboveIdleAtMax, with.PowerSource)
	}
	if without.PowerAtMaxW != nil || without.JoulesAtMax != nil || without.WattsPerCamera != nil {
		t.Errorf("NoPower-VL: power %v, J %v, W per camera %v; want none (no power samples is not 0 W)", without.PowerAtMaxW, without.JoulesAtMax, without.WattsPerCamera)
	}
	data, _ := json.Marshal(without)
	if strings.Contains(string(data), "power") || strings.Contains(string(data), "joules") {
		t.Errorf("a row without power samples encodes power fields: %s", data)
	}
	// A tighter target moves Max Cameras, and the power read with it.
	q := DefaultQuery()
	q.Target = 1
	for _, r := range Select(ds, q).Rows {
		if r.Model == "Power-VL" && (r.MaxCameras != 1 || *r.PowerAtMaxW != 14.2 || *r.WattsPerCamera != 14.2) {
			t.Errorf("at 1 s: Max %d, power %v, W per camera %v; want 1, 14.2, 14.2", r.MaxCameras, *r.PowerAtMaxW, *r.WattsPerCamera)
		}
	}
	// Not even one camera in time: no level to read the power at.
	q.Target = 0.5
	for _, r := range Select(ds, q).Rows {
		if r.PowerAtMaxW != nil {
			t.Errorf("%s at 0.5 s: power %v at Max Cameras 0, want none", r.Model, *r.PowerAtMaxW)
		}
	}
}

func TestEnergySentence(t *testing.T) {
	ds := Aggregate([]protocol.Run{
		powerRun("p", "Power-VL", moduleEnergy),
		powerRun("g", "GPU-VL", func(cams int) *protocol.Energy {
			return &protocol.Energy{Source: protocol.PowerSourceGPU, Samples: 10, MeanPowerW: 250, WindowSec: 10, JoulesPerAnswer: 31.25}
		}),
		powerRun("n", "NoPower-VL", func(int) *protocol.Energy { return nil }),
	}, time.Now())
	want := map[string]string{
		"Power-VL":   "At 2 cameras it draws 18.4 W, 9.6 J per answer (8.0 J above idle).",
		"GPU-VL":     "At 2 cameras it draws 250.0 W (the GPU alone), 31.3 J per answer.",
		"NoPower-VL": "",
	}
	for _, r := range ds.Rows {
		last := r.Explanation[len(r.Explanation)-1]
		got := ""
		if strings.Contains(last, " draws ") {
			got = last
		}
		if got != want[r.Model] {
			t.Errorf("%s: explanation ends %q, want the energy sentence %q", r.Model, last, want[r.Model])
		}
	}
	// Judged by p90 the level must have its tail; these have none.
	if s := EnergySentence(ds.Rows[0].Points, "720p", 1, 0, protocol.Judgement{Statistic: "p90", TargetSec: 3}); s != "" {
		t.Errorf("by p90 without tails: %q, want none", s)
	}
}

func TestPointWithoutAnswersHasNoJoules(t *testing.T) {
	c := protocol.Combination{ComboKey: protocol.ComboKey{Size: "720p", Images: 1, Cameras: 8}, Failed: 8,
		Energy: &protocol.Energy{Source: protocol.PowerSourceSimulated, Samples: 5, MeanPowerW: 30, WindowSec: 5}}
	p := pointOf(&c, "720p")
	if p.PowerW == nil || *p.PowerW != 30 || p.JoulesPerAnswer != nil {
		t.Errorf("a level with no answer: power %v, J %v; want 30 W and no J per answer", p.PowerW, p.JoulesPerAnswer)
	}
}

func TestRunCSVAndExportCarryThePower(t *testing.T) {
	run := powerRun("p", "Power-VL", moduleEnergy)
	run.Combinations[2].Energy = nil
	var buf bytes.Buffer
	if err := WriteRunCSV(&buf, &run); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	// The energy columns, before the power setting's and the load's.
	if got := recs[0][len(recs[0])-9 : len(recs[0])-3]; !slices.Equal(got, []string{"power_source", "mean_power_w", "power_window_sec", "joules_per_answer", "above_idle_joules_per_answer", "power_mode"}) {
		t.Errorf("last columns %q", got)
	}
	if recs[0][38] != "ttft_tail_p95" {
		t.Errorf("the older columns moved: column 39 is %q", recs[0][38])
	}
	for i, want := range [][]string{{"module_input", "18.4", "20", "9.6", "8"}, {"", "", "", "", ""}} {
		rec := recs[2+i]
		if got := rec[len(rec)-9 : len(rec)-4]; !slices.Equal(got, want) {
			t.Errorf("line %d (%s cameras): %q, want %q", 2+i, rec[7], got, want)
		}
	}
	buf.Reset()
	if err := Export(&buf, Aggregate([]protocol.Run{powerRun("p", "Power-VL", moduleEnergy)}, time.Now())); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"power_w":18.4`, `"power_source":"module_input"`, `"joules_per_answer":9.6`, `"above_idle_joules_per_answer":8`, "function energySentence(", "function costPerCameraMonth("} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("the exported page lacks %s", want)
		}
	}
}
