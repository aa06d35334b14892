package main

import (
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/agent/devicefacts/fakehw"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// On a Jetson whose module input reads a constant 15 W, bench reports
// 15 W over each combination's window, joules per answer that are 15 W
// times the window over the answers, and the idle power it sampled first.
func TestBenchEnergyOnFixtureJetson(t *testing.T) {
	bin, err := fakehw.Build(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	root, path := t.TempDir(), t.TempDir()
	if err := fakehw.WriteSysroot("orin-nx", root); err != nil {
		t.Fatal(err)
	}
	line := strings.Replace(fakehw.OrinNXLine, "VDD_IN 4304mW/4304mW", "VDD_IN 15000mW/15000mW", 1)
	if line == fakehw.OrinNXLine {
		t.Fatal("the fixture line has no VDD_IN 4304mW to replace")
	}
	cfg := fakehw.OrinNX()
	cfg.Tegrastats.Lines = []string{line}
	if err := fakehw.Install(path, bin, cfg); err != nil {
		t.Fatal(err)
	}
	fast, _ := benchFakeEngine(t)
	// Answers that take a while, so that each window spans several of
	// tegrastats' readings.
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(250 * time.Millisecond)
		fast.Config.Handler.ServeHTTP(w, r)
	}))
	t.Cleanup(slow.Close)

	jsonPath := filepath.Join(t.TempDir(), "run.json")
	code, out, errOut := runCLIEnv(t, map[string]string{"PATH": path, "VLMFLEET_SYSROOT": root},
		"bench", "--url", slow.URL+"/v1", "--model", "fake-vlm", "--sizes", "480p", "--multi-sizes", "480p",
		"--cameras", "1,2", "--requests", "6", "--images", "1", "--multi-requests", "1", "--warmup", "0",
		"--image-dir", snapshotDir(t), "--json", jsonPath)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	r := readRun(t, jsonPath)
	if p := r.IdlePower; p == nil || p.Source != protocol.PowerSourceModuleInput || math.Abs(p.MeanPowerW-15) > 0.15 || len(p.Series) == 0 {
		t.Errorf("idle power %+v; want 15 W from the module input, with its samples", p)
	}
	if len(r.Combinations) != 2 {
		t.Fatalf("%d combinations, want 2", len(r.Combinations))
	}
	for _, c := range r.Combinations {
		e := c.Energy
		if e == nil || c.Completed == 0 {
			t.Errorf("%s: %d completed, energy %+v", c.ComboKey, c.Completed, e)
			continue
		}
		want := 15 * c.WallSec / float64(c.Completed)
		if e.Source != protocol.PowerSourceModuleInput || math.Abs(e.MeanPowerW-15) > 0.15 ||
			math.Abs(e.JoulesPerAnswer-want) > 0.02*want || e.WindowSec != c.WallSec || e.Samples < 1 {
			t.Errorf("%s: energy %+v; want 15 W over %.3f s, %.3f J per answer", c.ComboKey, *e, c.WallSec, want)
		}
		if a := e.AboveIdleJoulesPerAnswer; a == nil || math.Abs(*a) > 0.02*want {
			t.Errorf("%s: above idle %v; want about 0 J at a constant draw", c.ComboKey, a)
		}
		if line := fmt.Sprintf("15.00 W over %.1f s, %.2f J per answer", e.WindowSec, e.JoulesPerAnswer); !strings.Contains(out, line) {
			t.Errorf("the summary lacks %q:\n%s", line, out)
		}
	}
	for _, want := range []string{"Energy, from the Jetson module's input rail:", "idle 15.00 W"} {
		if !strings.Contains(out, want) {
			t.Errorf("the summary lacks %q:\n%s", want, out)
		}
	}
}
