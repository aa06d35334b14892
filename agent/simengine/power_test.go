package simengine

import (
	"math"
	"reflect"
	"testing"
)

// A profile slowed s times serves the seed's sweep s times slower, alone
// and under load: TTFT times s, decode speed over s.
func TestGPUSlowdownScalesTheSweep(t *testing.T) {
	seen := map[string]bool{}
	for _, p := range Profiles() {
		if seen[p.Device] {
			continue
		}
		seen[p.Device] = true
		const s = 2.25
		slow := p.WithGPUSlowdown(s)
		for _, cams := range []int{1, 4} {
			sw := Sweep{Size: "720p", Images: 1, Cameras: cams, Requests: 8, Warmup: 1}
			base, err := Simulate(p, p.Contention, sw, calibrationSeed)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Simulate(slow, slow.Contention, sw, calibrationSeed)
			if err != nil {
				t.Fatal(err)
			}
			if r := got.TTFT / base.TTFT; math.Abs(r-s) > 0.01*s {
				t.Errorf("%s, %d cameras: TTFT %.3f s against %.3f s, ×%.4f; want ×%g", p.Key(), cams, got.TTFT, base.TTFT, r, s)
			}
			if r := base.TPS / got.TPS; math.Abs(r-s) > 0.01*s {
				t.Errorf("%s, %d cameras: TPS %.2f against %.2f, ÷%.4f; want ÷%g", p.Key(), cams, got.TPS, base.TPS, r, s)
			}
		}
	}
}

// No slowdown, or one that is not a finite number above 1, leaves the
// profile exactly as published; a server is given the slowed profile.
func TestGPUSlowdownIdentity(t *testing.T) {
	p := Profiles()[0]
	for _, s := range []float64{0, 1, 0.5, -2, math.NaN(), math.Inf(1)} {
		if got := p.WithGPUSlowdown(s); !reflect.DeepEqual(got, p) {
			t.Errorf("slowdown %g changed the profile: %+v", s, got)
		}
	}
	if got := New(p, Options{}).Profile(); !reflect.DeepEqual(got, p) {
		t.Errorf("a server without a slowdown serves %+v", got)
	}
	got := New(p, Options{GPUSlowdown: 3}).Profile()
	if got.TTFT720 != 3*p.TTFT720 || got.TPS != p.TPS/3 || got.Contention != p.Contention || got.Targets != nil {
		t.Errorf("a server slowed 3 times serves TTFT720 %g TPS %g contention %g targets %v; want %g, %g, %g, none",
			got.TTFT720, got.TPS, got.Contention, got.Targets, 3*p.TTFT720, p.TPS/3, p.Contention)
	}
}
