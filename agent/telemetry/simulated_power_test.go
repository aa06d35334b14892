package telemetry

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/agent/devicefacts"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// simPowerCase is a device in a power setting and the most it may draw.
type simPowerCase struct {
	device  string
	setting protocol.PowerSetting
	ceilW   float64
}

func simPowerCases(t *testing.T) []simPowerCase {
	t.Helper()
	var cases []simPowerCase
	for _, dev := range []string{"Jetson Orin NX", "Jetson AGX Orin", "Jetson Orin Nano"} {
		modes, _ := devicefacts.SimModes(dev)
		for _, m := range modes {
			ceil := simProfileFor(dev).maxW
			if m.BudgetW > 0 {
				ceil = min(ceil, m.BudgetW)
			}
			cases = append(cases, simPowerCase{dev, protocol.PowerSetting{Mode: m.Name}, ceil})
		}
	}
	for _, dev := range []string{"RTX PRO 6000", "RTX PRO 6000 Max-Q"} {
		l, _ := devicefacts.SimGPULimitsFor(dev)
		for _, w := range []float64{l.MinW, (l.MinW + l.DefaultW) / 2, l.DefaultW} {
			cases = append(cases, simPowerCase{dev, protocol.PowerSetting{LimitW: w}, w})
		}
	}
	return cases
}

// samplePower draws n readings at a load and returns their power.
func samplePower(t *testing.T, c simPowerCase, load float64, n int) []float64 {
	t.Helper()
	p, err := devicefacts.SimPowerFor(c.device, c.setting)
	if err != nil {
		t.Fatal(err)
	}
	sim := newSimulator(c.device, p, func() float64 { return load })
	out := make([]float64, n)
	for i := range out {
		s := sim.sample(sampleEvery)
		out[i] = *s.PowerW
		if c.setting.LimitW > 0 && *s.PowerW >= c.ceilW && !slices.Contains(s.Throttle, "sw_power_cap") {
			t.Errorf("%s at %q: held at its limit (%g W) without sw_power_cap", c.device, c.setting, *s.PowerW)
		}
	}
	return out
}

const sampleEvery = 100 * time.Millisecond

// The draw never passes the mode's budget or the GPU's limit, at any
// load; where the budget binds, full load reaches it.
func TestSimulatedDrawWithinBudget(t *testing.T) {
	for _, c := range simPowerCases(t) {
		for _, load := range []float64{0, 0.25, 0.5, 0.75, 1} {
			for _, w := range samplePower(t, c, load, 40) {
				if w > c.ceilW {
					t.Fatalf("%s in %q at load %g: %g W, above %g W", c.device, c.setting, load, w, c.ceilW)
				}
			}
		}
	}
	// The Orin NX's 10W mode would draw 11.7 W at full load were it not
	// held at its budget.
	nx10 := simPowerCase{"Jetson Orin NX", protocol.PowerSetting{Mode: "10W"}, 10}
	if got := slices.Max(samplePower(t, nx10, 1, 40)); got != 10 {
		t.Errorf("Orin NX 10W at full load: at most %g W; want held at 10 W", got)
	}
}

// A slower mode draws proportionally less above idle; the published mode
// draws as the zero setting does.
func TestSimulatedDrawFollowsClock(t *testing.T) {
	mean := func(ws []float64) float64 {
		sum := 0.0
		for _, w := range ws {
			sum += w
		}
		return sum / float64(len(ws))
	}
	const load = 0.4
	maxn := samplePower(t, simPowerCase{"Jetson Orin NX", protocol.PowerSetting{Mode: "MAXN"}, 25}, load, 200)
	asFound := samplePower(t, simPowerCase{"Jetson Orin NX", protocol.PowerSetting{}, 25}, load, 200)
	if !slices.Equal(maxn, asFound) {
		t.Error("MAXN draws otherwise than the Orin NX as published")
	}
	p := simProfileFor("Jetson Orin NX")
	slow, _ := devicefacts.SimPowerFor("Jetson Orin NX", protocol.PowerSetting{Mode: "25W"})
	got := mean(samplePower(t, simPowerCase{"Jetson Orin NX", protocol.PowerSetting{Mode: "25W"}, 25}, load, 200))
	want := p.idleW + (mean(maxn)-p.idleW)/slow.Slowdown
	if got < want*0.97 || got > want*1.03 {
		t.Errorf("Orin NX 25W at load %g: %.2f W mean; want %.2f W (MAXN's %.2f W above idle over %.2f)", load, got, want, mean(maxn), slow.Slowdown)
	}
}

// A setting the simulated device does not have fails the sampler's start,
// naming what it has.
func TestSimulatedRefusesUnknownMode(t *testing.T) {
	_, err := New(Options{Source: SourceSimulated, SimDevice: "Jetson Orin Nano", SimPower: protocol.PowerSetting{Mode: "MAXN"}})
	if err == nil || !strings.Contains(err.Error(), "15W, 25W, MAXN_SUPER") {
		t.Errorf("an unknown mode: %v", err)
	}
}
