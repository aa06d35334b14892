package protocol

import (
	"fmt"
	"math"
)

// Power sources an Energy is read from.
const (
	// PowerSourceModuleInput is a Jetson's module input rail (tegrastats
	// VDD_IN, or VIN on modules that name it so): the whole module.
	PowerSourceModuleInput = "module_input"
	// PowerSourceGPU is nvidia-smi's power.draw, summed over the GPUs the
	// engine uses: the GPUs' alone, not the host's.
	PowerSourceGPU = "gpu"
	// PowerSourceSimulated is the simulator's model of the device's draw.
	PowerSourceSimulated = "simulated"
)

// Energy is what a combination drew over its measured window, read from
// the telemetry series it keeps (Combination.TelemetrySeries). A
// combination without power samples has none (Combination.Energy nil),
// which is said as such, never as zero.
type Energy struct {
	// Source is one of the PowerSource* values: what the watts cover.
	Source string `json:"source"`
	// Samples is the power samples in the window.
	Samples int `json:"samples"`
	// MeanPowerW is the mean power over the measured window, watts.
	MeanPowerW float64 `json:"mean_power_w"`
	// WindowSec is the measured window's length, seconds (on the device's
	// time scale).
	WindowSec float64 `json:"window_sec"`
	// JoulesPerAnswer is MeanPowerW x WindowSec / the answers completed;
	// 0 when none completed.
	JoulesPerAnswer float64 `json:"joules_per_answer"`
	// AboveIdleJoulesPerAnswer is (MeanPowerW - the run's IdlePower) x
	// WindowSec / the answers completed: what the answers cost beyond the
	// device being on. Absent when the idle power is not known.
	AboveIdleJoulesPerAnswer *float64 `json:"above_idle_joules_per_answer,omitempty"`
}

// MaxIdleSamples bounds IdlePower.Series: a few seconds of readings at
// the shortest interval an agent samples at.
const MaxIdleSamples = 1024

// IdlePower is the device's draw sampled for a few seconds before the
// run's first combination, with nothing served, from the same source as
// the combinations' Energy.
type IdlePower struct {
	Source     string  `json:"source"`
	MeanPowerW float64 `json:"mean_power_w"`
	WindowSec  float64 `json:"window_sec"`
	// Series is the samples it is computed from.
	Series []TelemetrySample `json:"series,omitempty"`
}

// validate checks an energy's figures.
func (e *Energy) validate() error {
	switch e.Source {
	case PowerSourceModuleInput, PowerSourceGPU, PowerSourceSimulated:
	default:
		return fmt.Errorf("energy.source: %.40q, want %s, %s or %s", e.Source, PowerSourceModuleInput, PowerSourceGPU, PowerSourceSimulated)
	}
	if err := checkCount("energy.samples", e.Samples, MaxRequestsInCombination); err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"energy.mean_power_w", e.MeanPowerW}, {"energy.window_sec", e.WindowSec}, {"energy.joules_per_answer", e.JoulesPerAnswer}} {
		if err := checkFigure(f.name, f.v); err != nil {
			return err
		}
	}
	if a := e.AboveIdleJoulesPerAnswer; a != nil {
		// Above idle may be below zero: a device can draw less busy than
		// idle (a fan, a clock) within the noise.
		if err := checkFinite("energy.above_idle_joules_per_answer", *a); err != nil {
			return err
		}
	}
	return nil
}

// checkFinite refuses a figure that is not a finite number.
func checkFinite(field string, v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return fmt.Errorf("%s: %g, want a finite number", field, v)
	}
	return nil
}

// validate checks an idle power's figures and the length of its series.
func (p *IdlePower) validate() error {
	switch p.Source {
	case PowerSourceModuleInput, PowerSourceGPU, PowerSourceSimulated:
	default:
		return fmt.Errorf("idle_power.source: %.40q, want %s, %s or %s", p.Source, PowerSourceModuleInput, PowerSourceGPU, PowerSourceSimulated)
	}
	if err := checkFigure("idle_power.mean_power_w", p.MeanPowerW); err != nil {
		return err
	}
	if err := checkFigure("idle_power.window_sec", p.WindowSec); err != nil {
		return err
	}
	if len(p.Series) > MaxIdleSamples {
		return fmt.Errorf("idle_power.series: %d samples, at most %d", len(p.Series), MaxIdleSamples)
	}
	return nil
}
