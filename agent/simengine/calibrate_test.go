package simengine

import (
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
)

// TestCalibration runs the seed's sweep through every profile's model and
// checks that the published figures come out: single-camera TTFT and TPS,
// the multi-image and large-image TTFT within 10%, Max Cameras exactly.
func TestCalibration(t *testing.T) {
	refit := os.Getenv("VLMFLEET_SIM_REFIT") != ""
	var table strings.Builder
	for _, p := range Profiles() {
		if refit {
			x, ok, why := FitContention(p)
			fmt.Fprintf(&table, "%-22s %-32s %-7s %-10s contention %.4f ok=%v %s\n", p.Device, p.Model, p.Quantization, p.Engine, x, ok, why)
			p.Contention = x
		}
		checkProfile(t, p)
	}
	if refit {
		t.Logf("fitted contention:\n%s", table.String())
	}
	if testing.Verbose() {
		t.Logf("seed vs simulated (virtual time, seed's sweep):\n%s", calibrationTable())
	}
}

// calibrationTable prints the seed's figures beside the model's.
func calibrationTable() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-52s %13s %13s %15s %15s %9s  %s\n", "profile", "TTFT720 s", "TPS", "multi-image s", "large image s", "MaxCam@3", "TTFT by cameras (simulated: mean [lowest–highest run])")
	for _, p := range Profiles() {
		one := func(size string, n int) SweepResult {
			r, _ := Simulate(p, p.Contention, Sweep{Size: size, Images: n, Cameras: 1, Requests: 5, Warmup: 1}, calibrationSeed)
			return r
		}
		r := one("720p", 1)
		var lv []string
		ttft := func(c int) float64 { return levelTTFT(p, p.Contention, c) }
		for _, l := range p.Levels() {
			m, lo, hi := levelStats(p, p.Contention, l)
			lv = append(lv, fmt.Sprintf("%d:%.2f[%.2f–%.2f]", l, m, lo, hi))
		}
		seedMax := fmt.Sprint(p.Targets[0].Max)
		if p.Targets[0].Plus {
			seedMax += "+"
		}
		fmt.Fprintf(&b, "%-52s %6.2f/%6.2f %6.1f/%6.1f %7.2f/%7.2f %7.2f/%7.2f %4s/%-4d  %s\n", p.Key(),
			p.TTFT720, r.TTFT, p.TPS, r.TPS, p.TTFTMulti, one("720p", p.MultiN).TTFT, p.TTFTBig, one(p.BigSize, 1).TTFT,
			seedMax, MaxCameras(p.Levels(), ttft, 3), strings.Join(lv, " "))
	}
	return b.String()
}

func within(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if math.Abs(got-want) > tol*want {
		t.Errorf("%s: simulated %.3f, seed %.3f (more than %.0f%% off)", what, got, want, 100*tol)
	}
}

func checkProfile(t *testing.T, p Profile) {
	t.Helper()
	name := p.Key()
	one := func(size string, images int) SweepResult {
		r, err := Simulate(p, p.Contention, Sweep{Size: size, Images: images, Cameras: 1, Requests: 5, Warmup: 1}, calibrationSeed)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return r
	}
	r := one("720p", 1)
	within(t, name+" TTFT 720p", r.TTFT, p.TTFT720, 0.10)
	within(t, name+" TPS", r.TPS, p.TPS, 0.10)
	within(t, fmt.Sprintf("%s TTFT %d×720p", name, p.MultiN), one("720p", p.MultiN).TTFT, p.TTFTMulti, 0.10)
	within(t, name+" TTFT "+p.BigSize, one(p.BigSize, 1).TTFT, p.TTFTBig, 0.10)
	ttft := func(c int) float64 { return levelTTFT(p, p.Contention, c) }
	for _, tg := range p.Targets {
		got := MaxCameras(p.Levels(), ttft, tg.TargetS)
		if got != tg.Max {
			var lv []string
			for _, l := range p.Levels() {
				lv = append(lv, fmt.Sprintf("%d:%.2fs", l, ttft(l)))
			}
			t.Errorf("%s: Max Cameras at %gs = %d, seed %d (levels %s)", name, tg.TargetS, got, tg.Max, strings.Join(lv, " "))
		}
	}
	for _, lp := range p.LoadPoints {
		within(t, fmt.Sprintf("%s TTFT at %d cameras", name, lp.Cameras), ttft(lp.Cameras), lp.TTFT, 0.10)
	}
	// The readings must survive a real run's noise: hold in every
	// calibration run, with a margin for the demo's profiles.
	minMargin := 0.0
	for _, d := range demoProfiles(t) {
		if d.Key() == name {
			minMargin = 0.08
		}
	}
	if worstRunExempt(p) {
		return
	}
	for _, c := range p.constraints() {
		v := worstTTFT(p, p.Contention, c)
		if c.le && v > c.target/(1+minMargin) || !c.le && v <= c.target*(1+minMargin) {
			t.Errorf("%s: %d cameras at %gs target: worst calibration run %.3fs, within %.0f%% of the target or beyond it",
				name, c.cams, c.target, v, 100*minMargin)
		}
	}
}

// worstRunExempt names the profile whose seed figures leave no room for a
// worst run: Gemma-4-26B-A4B-it on Jetson AGX Orin answers one camera after
// 2.34 s yet keeps up with two within 3 s, so two cameras sent together
// (the first round of every sweep) average 1.5×2.34 = 3.5 s, and the mean
// of eight requests passes (2.9 s) only when the later rounds interleave.
func worstRunExempt(p Profile) bool {
	return p.Device == "Jetson AGX Orin" && p.Model == "Gemma-4-26B-A4B-it"
}
