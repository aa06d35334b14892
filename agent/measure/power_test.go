package measure

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/vlmfleet/vlmfleet/agent/engine"
	"github.com/vlmfleet/vlmfleet/agent/simengine"
	"github.com/vlmfleet/vlmfleet/agent/telemetry"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// A simulated run in a power mode samples the simulated device in that
// mode: its draw stays within the mode's budget.
func TestSimulatedRunDrawsWithinItsMode(t *testing.T) {
	const mode, budgetW = "10W", 10
	p := simengine.ProfilesFor("Jetson Orin NX")[0]
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	eng, err := engine.New(engine.Config{Kind: engine.KindSim, SimDevice: p.Device, SimModel: p.Model,
		SimQuantization: p.Quantization, SimEngine: p.Engine, SimSpeedup: 50, SimPowerMode: mode},
		engine.Env{LogDir: t.TempDir(), Log: log})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var maxW float64
	spec := Spec{
		Run: protocol.Run{ID: "r1", Source: protocol.SourceLab, Workload: tinyWorkload(),
			Config: protocol.Configuration{Model: p.Model, PowerMode: mode}},
		Engine:    eng,
		Images:    pictures(t),
		Telemetry: Telemetry{Source: telemetry.SourceAuto, Interval: 200 * time.Millisecond},
		Version:   "test",
		Log:       log,
	}
	run, err := Run(context.Background(), spec, Hooks{Sample: func(s protocol.TelemetrySample) {
		mu.Lock()
		defer mu.Unlock()
		if s.PowerW != nil {
			maxW = max(maxW, *s.PowerW)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != protocol.RunCompleted || run.Engine.Props["sim_power_mode"] != mode {
		t.Fatalf("run %s, engine props %v", run.Status, run.Engine.Props)
	}
	mu.Lock()
	defer mu.Unlock()
	if maxW == 0 || maxW > budgetW {
		t.Errorf("drew up to %g W in %s; want some draw, at most %d W", maxW, mode, budgetW)
	}
}
