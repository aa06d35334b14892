package telemetry

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/vlmfleet/vlmfleet/agent/devicefacts/fakehw"
	"github.com/vlmfleet/vlmfleet/internal/testutil"
	"github.com/vlmfleet/vlmfleet/protocol"
)

func scenario(t *testing.T, sysroot string, cfg fakehw.Config) (root, path string) {
	t.Helper()
	return fakehw.Scenario(t, fakeBinary, sysroot, cfg)
}

func testLog(t *testing.T) zerolog.Logger {
	return zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.InfoLevel)
}

// collect runs s until it has delivered n samples (or until until says
// stop), then stops it and checks Run returned nil.
func collect(t *testing.T, s *Sampler, n int, until func(protocol.TelemetrySample) bool) []protocol.TelemetrySample {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := make(chan protocol.TelemetrySample, 64)
	done := make(chan error, 1)
	go func() {
		done <- s.Run(ctx, func(smp protocol.TelemetrySample) {
			select {
			case ch <- smp:
			default:
			}
		})
	}()
	var got []protocol.TelemetrySample
	timeout := time.After(20 * time.Second)
	for len(got) < n {
		select {
		case smp := <-ch:
			got = append(got, smp)
			if until != nil && until(smp) {
				n = len(got)
			}
		case err := <-done:
			t.Fatalf("Run returned early after %d samples: %v", len(got), err)
		case <-timeout:
			t.Fatalf("only %d of %d samples within 20s", len(got), n)
		}
	}
	cancel()
	testutil.Returned(t, done, "Run")
	return got
}

func TestAutoSource(t *testing.T) {
	for _, tc := range []struct {
		sysroot string
		cfg     fakehw.Config
		want    string
	}{
		{"orin-nx", fakehw.OrinNX(), SourceTegrastats},
		{"orin-nx", fakehw.Config{}, SourceHost}, // a Jetson without tegrastats
		{"x86-workstation", fakehw.RTXPro6000MaxQ(), SourceNvidiaSMI},
		{"x86-workstation", fakehw.Config{}, SourceHost},
	} {
		root, path := scenario(t, tc.sysroot, tc.cfg)
		s, err := New(Options{SysRoot: root, Path: path, Log: testLog(t)})
		if err != nil {
			t.Fatal(err)
		}
		if s.Source() != tc.want {
			t.Errorf("%s: source %q, want %q", tc.sysroot, s.Source(), tc.want)
		}
	}
	root, path := scenario(t, "x86-workstation", fakehw.Config{})
	if _, err := New(Options{Source: SourceTegrastats, SysRoot: root, Path: path}); err == nil {
		t.Error("an explicit tegrastats that is not installed must be an error")
	}
	if _, err := New(Options{Source: "powertop"}); err == nil {
		t.Error("an unknown source must be an error")
	}
	if _, err := New(Options{Source: SourceOff}); err == nil {
		t.Error("source off has no sampler; New must refuse it")
	}
}

// The tools are looked up on Options.Path alone: an empty one finds none,
// whatever the process's PATH holds.
func TestEmptyPathFindsNoTool(t *testing.T) {
	root, path := scenario(t, "x86-workstation", fakehw.RTXPro6000MaxQ())
	t.Setenv("PATH", path)
	s, err := New(Options{SysRoot: root, Log: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	if s.Source() != SourceHost {
		t.Errorf("auto with an empty Path chose %q, want %q", s.Source(), SourceHost)
	}
	if _, err := New(Options{Source: SourceNvidiaSMI, SysRoot: root}); err == nil {
		t.Error("an explicit nvidia-smi with an empty Path must be an error")
	}
}

func TestRunTegrastats(t *testing.T) {
	root, path := scenario(t, "orin-nx", fakehw.OrinNX())
	s, err := New(Options{Interval: 20 * time.Millisecond, SysRoot: root, Path: path, Log: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	got := collect(t, s, 3, nil)
	for _, smp := range got {
		if !near(smp.PowerW, 4.304) || !near(smp.MemUsedMB, 1224) || smp.Rails["VDD_IN"] != 4.304 {
			t.Errorf("sample %+v", smp)
		}
		if smp.AgentRSSMB == nil || *smp.AgentRSSMB <= 0 || smp.Extra["host_mem_total_mb"] <= 0 {
			t.Errorf("host and agent figures missing: %+v", smp)
		}
		if time.Since(smp.Time) > time.Minute {
			t.Errorf("sample time %v is the line's, not when it arrived", smp.Time)
		}
	}
	if got[1].AgentCPU == nil {
		t.Error("agent CPU missing")
	}
}

// A Thor's tegrastats (JetPack 7), run as a program, gives samples with
// a temperature and a power.
func TestRunTegrastatsJetPack7(t *testing.T) {
	root, path := scenario(t, "", fakehw.AGXThor())
	s, err := New(Options{Source: SourceTegrastats, Interval: 20 * time.Millisecond, SysRoot: root, Path: path, Log: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	for _, smp := range collect(t, s, 2, nil) {
		if !near(smp.TempC, 48.031) || !near(smp.PowerW, 38.022) {
			t.Errorf("temp %s power %s, want 48.031 C and 38.022 W", show(smp.TempC), show(smp.PowerW))
		}
	}
}

func TestRunTegrastatsRestartsAfterCrash(t *testing.T) {
	cfg := fakehw.AGXOrin()
	cfg.Tegrastats.ExitAfter = 2
	root, path := scenario(t, "agx-orin", cfg)
	s, err := New(Options{Interval: 10 * time.Millisecond, SysRoot: root, Path: path,
		RestartDelay: 10 * time.Millisecond, Log: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	// Each run prints two lines and crashes: five samples take three runs.
	got := collect(t, s, 5, nil)
	if !near(got[4].PowerW, 3.818) {
		t.Errorf("sample after restart %+v", got[4])
	}
}

func TestRunTegrastatsOverCurrent(t *testing.T) {
	root, path := scenario(t, "orin-nx", fakehw.OrinNX())
	s, err := New(Options{Interval: 20 * time.Millisecond, SysRoot: root, Path: path, Log: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	counter := filepath.Join(root, "sys/class/hwmon/hwmon1/oc2_event_cnt")
	bumped := false
	got := collect(t, s, 50, func(smp protocol.TelemetrySample) bool {
		if !bumped {
			// After the first sample the counter rises once: a later
			// sample must say so.
			if slices.Contains(smp.Throttle, ThrottleOverCurrent) {
				t.Error("over-current before any event")
			}
			if err := os.WriteFile(counter, []byte("3\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			bumped = true
			return false
		}
		return slices.Contains(smp.Throttle, ThrottleOverCurrent)
	})
	if last := got[len(got)-1]; !slices.Contains(last.Throttle, ThrottleOverCurrent) {
		t.Errorf("no over-current sample in %d samples", len(got))
	}
	if sum := Summarize(got, s.Source()); !sum.Throttled || !slices.Contains(sum.Throttle, ThrottleOverCurrent) {
		t.Errorf("summary %+v", sum)
	}
}

func TestRunNvidiaSMI(t *testing.T) {
	root, path := scenario(t, "x86-workstation", fakehw.RTXPro6000MaxQ())
	s, err := New(Options{Interval: 20 * time.Millisecond, SysRoot: root, Path: path, Log: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	for _, smp := range collect(t, s, 3, nil) {
		if !near(smp.PowerW, 287.45) || !near(smp.GPUUtil, 87) || !near(smp.TempC, 71) || !near(smp.MemUsedMB, 85012) {
			t.Errorf("sample %+v", smp)
		}
		if !slices.Equal(smp.Throttle, []string{"sw_power_cap"}) || smp.Extra["pstate"] != 1 || smp.CPUUtil == nil {
			t.Errorf("throttle %v extra %v cpu %s", smp.Throttle, smp.Extra, show(smp.CPUUtil))
		}
	}
}

func TestRunNvidiaSMIProbesAndCombines(t *testing.T) {
	// An older driver: no clocks_event_reasons (the throttle name works), and
	// this one lacks pstate too; two GPUs.
	cfg := fakehw.RTXPro6000Pair()
	cfg.SMI.Unsupported = append(cfg.SMI.Unsupported, "pstate")
	root, path := scenario(t, "x86-workstation", cfg)
	s, err := New(Options{Source: SourceNvidiaSMI, Interval: 20 * time.Millisecond, SysRoot: root, Path: path, Log: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	for _, smp := range collect(t, s, 3, nil) {
		if !near(smp.PowerW, 300.75) || !near(smp.TempC, 55) || !near(smp.GPUUtil, 20) || !near(smp.MemUsedMB, 2048) {
			t.Errorf("combined sample %+v", smp)
		}
		if smp.Extra["gpus"] != 2 || smp.Extra["gpu1_power_w"] != 200.25 || smp.Extra["gpu0_clocks_event_reasons"] != 1 {
			t.Errorf("per-GPU values %v", smp.Extra)
		}
		if _, ok := smp.Extra["gpu0_pstate"]; ok {
			t.Error("pstate was unsupported and must have been dropped")
		}
		if _, ok := smp.Extra["gpu0_sm_mhz"]; ok {
			t.Error("clocks.sm was [N/A]")
		}
		if len(smp.Throttle) != 0 {
			t.Errorf("gpu_idle is no throttling: %v", smp.Throttle)
		}
	}
}

func TestRunNvidiaSMINoFields(t *testing.T) {
	cfg := fakehw.RTXPro6000MaxQ()
	cfg.SMI.Unsupported = smiFields()
	cfg.SMI.Unsupported = append(cfg.SMI.Unsupported, "clocks_throttle_reasons.active")
	root, path := scenario(t, "x86-workstation", cfg)
	s, err := New(Options{Source: SourceNvidiaSMI, SysRoot: root, Path: path, Log: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := s.Run(ctx, func(protocol.TelemetrySample) {}); err == nil {
		t.Error("Run must fail when nvidia-smi answers no field")
	}
}

func TestRunHost(t *testing.T) {
	s, err := New(Options{Source: SourceHost, Interval: 20 * time.Millisecond, Log: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	for _, smp := range collect(t, s, 2, nil) {
		if smp.CPUUtil == nil || smp.MemUsedMB == nil || *smp.MemTotalMB <= 0 || smp.GPUUtil != nil || smp.PowerW != nil {
			t.Errorf("host sample %+v", smp)
		}
	}
}

func TestRunSimulated(t *testing.T) {
	for _, tc := range []struct {
		device     string
		load       float64
		minW, maxW float64
		throttled  bool
	}{
		{"RTX PRO 6000 Max-Q", 1, 250, 300, true},
		{"RTX PRO 6000", 1, 500, 600, false},
		{"Jetson AGX Orin", 0, 14, 16, false},
		{"Jetson Orin NX", 0.5, 10, 20, false},
	} {
		s, err := New(Options{Source: SourceSimulated, SimDevice: tc.device, SimLoad: func() float64 { return tc.load },
			Interval: 10 * time.Millisecond, Log: testLog(t)})
		if err != nil {
			t.Fatal(err)
		}
		got := collect(t, s, 3, nil)
		sum := Summarize(got, s.Source())
		if sum.PowerMaxW == nil || *sum.PowerMaxW > tc.maxW || *sum.PowerMeanW < tc.minW || sum.Throttled != tc.throttled {
			t.Errorf("%s at load %v: %+v (power %s..%s)", tc.device, tc.load, sum, show(sum.PowerMeanW), show(sum.PowerMaxW))
		}
		if !near(sum.GPUUtilMean, tc.load*100) && (tc.load == 0 || *sum.GPUUtilMean < tc.load*100-5) {
			t.Errorf("%s: util %s at load %v", tc.device, show(sum.GPUUtilMean), tc.load)
		}
	}
}
