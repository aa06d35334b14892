package measure

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/vlmfleet/vlmfleet/agent/telemetry"
	"github.com/vlmfleet/vlmfleet/protocol"
)

func watts(ws ...float64) []protocol.TelemetrySample {
	out := make([]protocol.TelemetrySample, len(ws))
	for i := range ws {
		out[i].PowerW = &ws[i]
	}
	return out
}

// A combination's energy is its window's mean power times the window,
// shared among its answers; samples without power are not counted.
func TestEnergyOfSamples(t *testing.T) {
	series := append(watts(14, 16, 15), protocol.TelemetrySample{})
	e := energyOf(series, telemetry.SourceTegrastats, 10, 4, nil)
	if e == nil {
		t.Fatal("no energy from three power samples")
	}
	if e.Source != protocol.PowerSourceModuleInput || e.Samples != 3 || e.MeanPowerW != 15 || e.WindowSec != 10 ||
		e.JoulesPerAnswer != 37.5 || e.AboveIdleJoulesPerAnswer != nil {
		t.Errorf("energy %+v; want module input, 3 samples, 15 W over 10 s, 37.5 J per answer, no above-idle", *e)
	}
	if e := energyOf(watts(300), telemetry.SourceNvidiaSMI, 2, 0, nil); e == nil || e.Source != protocol.PowerSourceGPU || e.JoulesPerAnswer != 0 {
		t.Errorf("a GPU window without answers: %+v; want gpu, 0 J per answer", e)
	}
}

// Without a power sample there is no energy, never a zero one.
func TestEnergyWithoutPowerSamplesIsNil(t *testing.T) {
	for name, c := range map[string]struct {
		series []protocol.TelemetrySample
		source string
	}{
		"no series":             {nil, telemetry.SourceTegrastats},
		"samples without power": {make([]protocol.TelemetrySample, 3), telemetry.SourceNvidiaSMI},
		"the host":              {watts(5), telemetry.SourceHost},
		"no telemetry":          {nil, ""},
	} {
		if e := energyOf(c.series, c.source, 10, 4, nil); e != nil {
			t.Errorf("%s: energy %+v, want none", name, *e)
		}
	}
}

// The idle device's draw, sampled before the first combination, is what
// the energy above idle is counted from. A simulator ten times faster
// than its device is sampled for a tenth of the window, read on the
// device's scale.
func TestIdleSampleGivesAboveIdleEnergy(t *testing.T) {
	m := &measurement{
		spec:  Spec{Telemetry: Telemetry{Source: telemetry.SourceSimulated, Interval: 10 * time.Millisecond}, Log: zerolog.Nop()},
		run:   protocol.Run{Simulated: true, Device: protocol.DeviceFacts{Name: "Jetson Orin NX"}},
		clock: clock{speedup: 10},
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tel := m.startTelemetry(ctx)
	defer tel.stop()
	began := time.Now()
	m.sampleIdle(ctx, tel)
	spent := time.Since(began)
	idle := m.run.IdlePower
	if idle == nil {
		t.Fatal("no idle power from the simulated device")
	}
	if idle.Source != protocol.PowerSourceSimulated || len(idle.Series) < 2 || idle.MeanPowerW <= 0 {
		t.Errorf("idle power %+v", *idle)
	}
	if mean, _ := meanPower(idle.Series); mean != idle.MeanPowerW {
		t.Errorf("idle mean %g W, its series' %g W", idle.MeanPowerW, mean)
	}
	if idle.WindowSec < idleWindow.Seconds() || spent < idleWindow/10 {
		t.Errorf("idle window %g s after %v; want at least %v, a tenth of it spent", idle.WindowSec, spent, idleWindow)
	}
	busy := idle.MeanPowerW + 10
	e := energyOf(watts(busy, busy), telemetry.SourceSimulated, 8, 4, idle)
	if e == nil || e.AboveIdleJoulesPerAnswer == nil || math.Abs(*e.AboveIdleJoulesPerAnswer-20) > 1e-9 {
		t.Fatalf("energy %+v; want 10 W above idle x 8 s / 4 answers = 20 J", e)
	}
}

// A source without power, or no telemetry at all, takes no idle sample
// and spends no time on one.
func TestNoIdleSampleWithoutPower(t *testing.T) {
	for _, source := range []string{telemetry.SourceHost, telemetry.SourceOff} {
		m := &measurement{
			spec:  Spec{Telemetry: Telemetry{Source: source, Interval: 10 * time.Millisecond}, Log: zerolog.Nop()},
			clock: clock{speedup: 1},
		}
		ctx, cancel := context.WithCancel(context.Background())
		tel := m.startTelemetry(ctx)
		began := time.Now()
		m.sampleIdle(ctx, tel)
		if spent := time.Since(began); m.run.IdlePower != nil || spent > time.Second {
			t.Errorf("%s: idle power %+v after %v; want none, at once", source, m.run.IdlePower, spent)
		}
		tel.stop()
		cancel()
	}
}
