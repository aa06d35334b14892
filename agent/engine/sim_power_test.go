package engine

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/agent/loadgen"
	"github.com/vlmfleet/vlmfleet/agent/simengine"
)

// A mode the simulated Jetson does not list, or a setting of the wrong
// kind, fails the engine's start with what the device takes.
func TestSimPowerRefused(t *testing.T) {
	env := newTestEnv(t)
	nx := simProfileOn(t, "Jetson Orin NX")
	rtx := simProfileOn(t, "RTX PRO 6000")
	cases := []struct {
		p     simengine.Profile
		mode  string
		limit float64
		want  []string
	}{
		{nx, "7W", 0, []string{"sim_power_mode", `no power mode "7W"`, "MAXN, 10W, 15W, 25W"}},
		{nx, "", 300, []string{"not a power limit"}},
		{rtx, "MAXN", 0, []string{"no nvpmodel modes", "150-600 W"}},
		{rtx, "", 700, []string{"outside its range 150-600 W"}},
	}
	for _, c := range cases {
		_, err := New(simConfig(c.p, c.mode, c.limit), env.Env)
		if err == nil {
			t.Errorf("%s mode %q limit %g: accepted", c.p.Device, c.mode, c.limit)
			continue
		}
		mustContain(t, "error", err.Error(), c.want...)
	}
}

// The engine serves a lower mode slower by the mode's factor, end to end
// (the simulated TTFT and time to the last token of one request, in the
// simulator's own clock), shows the mode in its info, and serves the
// published mode exactly as no mode at all.
func TestSimPowerMode(t *testing.T) {
	t.Parallel()
	p := simProfileOn(t, "Jetson Orin NX")
	base, info := simRequest(t, p, "", 0)
	if _, ok := info["sim_power_mode"]; ok {
		t.Errorf("no mode set, yet info says %q", info["sim_power_mode"])
	}
	same, info := simRequest(t, p, "MAXN", 0)
	// The model's times are differences of its clock, so equal up to rounding.
	if !closeTo(same.TTFT, base.TTFT) || !closeTo(same.LastToken, base.LastToken) || info["sim_power_mode"] != "MAXN" || info["sim_gpu_slowdown"] != "" {
		t.Errorf("MAXN: %+v (info %v); as published %+v", same, info, base)
	}
	slow, info := simRequest(t, p, "15W", 0)
	const want = 918.0 * 4 / (612 * 2) // the GPU's clock × TPCs, MAXN over 15W
	if info["sim_power_mode"] != "15W" || info["sim_gpu_slowdown"] != "3" || info["sim_power_ceiling_w"] != "15" {
		t.Errorf("15W: info %v", info)
	}
	for _, r := range []struct {
		what      string
		got, base float64
	}{{"TTFT", slow.TTFT, base.TTFT}, {"last token", slow.LastToken, base.LastToken}} {
		if ratio := r.got / r.base; math.Abs(ratio-want) > 0.01*want {
			t.Errorf("15W %s: %.3f s against %.3f s, ×%.3f; want ×%g", r.what, r.got, r.base, ratio, want)
		}
	}
}

func closeTo(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

func simProfileOn(t *testing.T, device string) simengine.Profile {
	t.Helper()
	ps := simengine.ProfilesFor(device)
	if len(ps) == 0 {
		t.Fatalf("no simulated profile on %s", device)
	}
	return ps[0]
}

func simConfig(p simengine.Profile, mode string, limitW float64) Config {
	return Config{Kind: KindSim, SimDevice: p.Device, SimModel: p.Model, SimQuantization: p.Quantization,
		SimEngine: p.Engine, SimSpeedup: 200, SimPowerMode: mode, SimPowerLimitW: limitW}
}

// simRequest serves one request on the profile in a power setting and
// returns the simulator's timings of it and the engine's props.
func simRequest(t *testing.T, p simengine.Profile, mode string, limitW float64) (loadgen.SimTimings, map[string]string) {
	t.Helper()
	e, err := New(simConfig(p, mode, limitW), newTestEnv(t).Env)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ep, err := e.Start(ctx, Needs{MaxCameras: 1})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	defer func() { _ = e.Stop(ctx) }()
	code, body := chat(t, ep, pngDataURL(t, 1280, 720), 1)
	if code != 200 {
		t.Fatalf("chat: HTTP %d %s", code, body)
	}
	for _, line := range strings.Split(body, "\n") {
		var chunk map[string]json.RawMessage
		if json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &chunk) != nil || chunk[loadgen.SimTimingsKey] == nil {
			continue
		}
		var st loadgen.SimTimings
		if err := json.Unmarshal(chunk[loadgen.SimTimingsKey], &st); err != nil {
			t.Fatal(err)
		}
		return st, e.Info().Props
	}
	t.Fatalf("no %s in the answer: %s", loadgen.SimTimingsKey, body)
	return loadgen.SimTimings{}, nil
}
