package devicefacts

import (
	"math"
	"strings"
	"testing"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// The modes SimPowerModes lists are the table's, in its order, with every
// GPU cap set, and the mode a device starts in is one of them.
func TestSimPowerModes(t *testing.T) {
	for _, dev := range []string{"Jetson Orin NX", "Jetson AGX Orin", "Jetson Orin Nano"} {
		modes, current := SimPowerModes(dev)
		table, ref := SimModes(dev)
		if len(modes) == 0 || len(modes) != len(table) || current != ref {
			t.Fatalf("%s: %d modes (table %d), current %q (reference %q)", dev, len(modes), len(table), current, ref)
		}
		pc := protocol.PowerControl{Modes: modes}
		if !pc.HasMode(current) {
			t.Errorf("%s: starts in %q, not among %v", dev, current, pc.ModeNames())
		}
		for i, m := range modes {
			if m.ID != table[i].ID || m.Name != table[i].Name || m.GPUMaxFreqHz != table[i].GPUMaxFreqHz || m.GPUMaxFreqHz <= 0 {
				t.Errorf("%s mode %d: %+v, table %+v", dev, i, m, table[i])
			}
		}
		// The simulated facts start in the same mode.
		if f := Simulated(dev); f.Jetson == nil || f.Jetson.PowerMode != current {
			t.Errorf("%s: simulated facts' mode is not %q: %+v", dev, current, f.Jetson)
		}
	}
	for _, dev := range []string{"RTX PRO 6000", "RTX PRO 6000 Max-Q", "Commodore 64"} {
		if modes, current := SimPowerModes(dev); modes != nil || current != "" {
			t.Errorf("%s: modes %v, current %q; want none", dev, modes, current)
		}
	}
}

// A mode is slower than the published one by the ratio of GPU throughput
// (clock × powered TPCs); the published mode and the zero setting are the
// profile exactly; a GPU limit below the default slows by the cube root.
func TestSimPowerFor(t *testing.T) {
	cases := []struct {
		dev      string
		s        protocol.PowerSetting
		slowdown float64
		ceilingW float64
	}{
		{"Jetson Orin NX", protocol.PowerSetting{}, 1, 0},
		{"Jetson Orin NX", protocol.PowerSetting{Mode: "MAXN"}, 1, 0},
		{"Jetson Orin NX", protocol.PowerSetting{Mode: "10W"}, 918.0 * 4 / (612 * 2), 10},
		{"Jetson Orin NX", protocol.PowerSetting{Mode: "15W"}, 918.0 * 4 / (612 * 2), 15},
		{"Jetson Orin NX", protocol.PowerSetting{Mode: "25W"}, 918.0 / 408, 25},
		{"Jetson AGX Orin", protocol.PowerSetting{Mode: "MODE_15W"}, 1300.0 * 8 / (408 * 3), 15},
		{"Jetson AGX Orin", protocol.PowerSetting{Mode: "MODE_30W"}, 1300.0 * 8 / (612 * 4), 30},
		{"Jetson AGX Orin", protocol.PowerSetting{Mode: "MODE_50W"}, 1300.0 / 816, 50},
		{"Jetson Orin Nano", protocol.PowerSetting{Mode: "MAXN_SUPER"}, 1, 0},
		{"Jetson Orin Nano", protocol.PowerSetting{Mode: "25W"}, 1020.0 / 918, 25},
		{"Jetson Orin Nano", protocol.PowerSetting{Mode: "15W"}, 1020.0 / 612, 15},
		{"RTX PRO 6000", protocol.PowerSetting{}, 1, 0},
		{"RTX PRO 6000", protocol.PowerSetting{LimitW: 600}, 1, 600},
		{"RTX PRO 6000", protocol.PowerSetting{LimitW: 300}, math.Cbrt(2), 300},
		{"RTX PRO 6000 Max-Q", protocol.PowerSetting{LimitW: 300}, 1, 300},
		{"RTX PRO 6000 Max-Q", protocol.PowerSetting{LimitW: 150}, math.Cbrt(2), 150},
	}
	for _, c := range cases {
		got, err := SimPowerFor(c.dev, c.s)
		if err != nil {
			t.Errorf("%s %q: %v", c.dev, c.s, err)
			continue
		}
		if math.Abs(got.Slowdown-c.slowdown) > 1e-9 || got.CeilingW != c.ceilingW {
			t.Errorf("%s %q: %+v; want slowdown %g, ceiling %g W", c.dev, c.s, got, c.slowdown, c.ceilingW)
		}
	}
}

// A setting the device cannot take is refused with what it does take.
func TestSimPowerForRefuses(t *testing.T) {
	cases := []struct {
		dev  string
		s    protocol.PowerSetting
		want []string
	}{
		{"Jetson Orin NX", protocol.PowerSetting{Mode: "7W"}, []string{`no power mode "7W"`, "MAXN, 10W, 15W, 25W"}},
		{"Jetson AGX Orin", protocol.PowerSetting{Mode: "30W"}, []string{`no power mode "30W"`, "MAXN, MODE_15W, MODE_30W, MODE_50W"}},
		{"Jetson Orin Nano", protocol.PowerSetting{Mode: "MAXN"}, []string{`no power mode "MAXN"`, "15W, 25W, MAXN_SUPER"}},
		{"Jetson Orin NX", protocol.PowerSetting{LimitW: 20}, []string{"not a power limit", "MAXN, 10W"}},
		{"RTX PRO 6000", protocol.PowerSetting{Mode: "MAXN"}, []string{"no nvpmodel modes", "150-600 W"}},
		{"RTX PRO 6000", protocol.PowerSetting{LimitW: 100}, []string{"100 W is outside its range 150-600 W"}},
		{"RTX PRO 6000 Max-Q", protocol.PowerSetting{LimitW: 400}, []string{"400 W is outside its range 150-300 W"}},
		{"Commodore 64", protocol.PowerSetting{Mode: "MAXN"}, []string{"no power model"}},
	}
	for _, c := range cases {
		_, err := SimPowerFor(c.dev, c.s)
		if err == nil {
			t.Errorf("%s %q: accepted", c.dev, c.s)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s %q: %q lacks %q", c.dev, c.s, err, w)
			}
		}
	}
}

// The simulated boards report their limits as nvidia-smi would.
func TestSimulatedGPULimits(t *testing.T) {
	for dev, want := range map[string]SimGPULimits{
		"RTX PRO 6000":       {DefaultW: 600, MaxW: 600, MinW: 150},
		"RTX PRO 6000 Max-Q": {DefaultW: 300, MaxW: 300, MinW: 150},
	} {
		f := Simulated(dev)
		if len(f.GPUs) != 1 {
			t.Fatalf("%s: %d GPUs", dev, len(f.GPUs))
		}
		g := f.GPUs[0]
		if g.DefaultPowerLimitW != want.DefaultW || g.MaxPowerLimitW != want.MaxW || g.MinPowerLimitW != want.MinW || g.PowerLimitW != want.DefaultW {
			t.Errorf("%s: limits default %g max %g min %g now %g; want %+v", dev, g.DefaultPowerLimitW, g.MaxPowerLimitW, g.MinPowerLimitW, g.PowerLimitW, want)
		}
	}
}
