package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/vlmfleet/vlmfleet/agent/devicefacts/fakehw"
	"github.com/vlmfleet/vlmfleet/protocol"
)

func TestDeviceCommand(t *testing.T) {
	// One build of the fake tools serves every case.
	bin, err := fakehw.Build(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	setup := func(t *testing.T, sysroot string, cfg fakehw.Config) func(string) string {
		root, path := t.TempDir(), t.TempDir()
		if err := fakehw.WriteSysroot(sysroot, root); err != nil {
			t.Fatal(err)
		}
		if err := fakehw.Install(path, bin, cfg); err != nil {
			t.Fatal(err)
		}
		env := map[string]string{"VLMFLEET_SYSROOT": root, "PATH": path}
		return func(k string) string { return env[k] }
	}
	device := func(t *testing.T, getenv func(string) string, args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := run(append([]string{"device", "--interval", "20ms"}, args...), &out, &errb, getenv)
		return code, out.String(), errb.String()
	}

	t.Run("json on an Orin NX", func(t *testing.T) {
		code, out, errs := device(t, setup(t, "orin-nx", fakehw.OrinNX()), "--json")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errs)
		}
		var rep struct {
			Device protocol.DeviceFacts      `json:"device"`
			Sample *protocol.TelemetrySample `json:"sample"`
			Source string                    `json:"source"`
		}
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("%v in %s", err, out)
		}
		if rep.Device.Name != "Jetson Orin NX" || rep.Device.Jetson == nil || rep.Device.Jetson.JetPack != "6.2" ||
			rep.Device.Jetson.PowerMode != "MAXN" {
			t.Errorf("device %+v", rep.Device)
		}
		if rep.Source != "tegrastats" || rep.Sample == nil || rep.Sample.PowerW == nil || *rep.Sample.PowerW != 4.304 {
			t.Errorf("source %q sample %+v", rep.Source, rep.Sample)
		}
	})

	t.Run("text on an RTX PRO 6000 Max-Q", func(t *testing.T) {
		code, out, errs := device(t, setup(t, "x86-workstation", fakehw.RTXPro6000MaxQ()))
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errs)
		}
		for _, want := range []string{"Device:   RTX PRO 6000 Max-Q (dgpu)", "CUDA 13.0", "power limit 300 W",
			"Sample:   nvidia-smi", "power 287.45 W", "memory 85012/97887 MB", "throttle sw_power_cap"} {
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		}
	})

	t.Run("simulated", func(t *testing.T) {
		code, out, errs := device(t, setup(t, "x86-workstation", fakehw.Config{}), "--json", "--simulate", "Jetson AGX Orin")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errs)
		}
		if !strings.Contains(out, `"kind": "simulated"`) || !strings.Contains(out, `"source": "simulated"`) ||
			!strings.Contains(out, `"VDD_GPU_SOC"`) {
			t.Errorf("output %s", out)
		}
	})

	t.Run("missing tool", func(t *testing.T) {
		code, out, errs := device(t, setup(t, "x86-workstation", fakehw.Config{}), "--json", "--source", "nvidia-smi")
		if code != 1 || !strings.Contains(errs, "nvidia-smi not found") || !strings.Contains(out, `"error"`) {
			t.Errorf("exit %d out %s err %s", code, out, errs)
		}
	})

	t.Run("bad flags", func(t *testing.T) {
		getenv := setup(t, "x86-workstation", fakehw.Config{})
		for _, args := range [][]string{{"--interval", "0s"}, {"extra"}, {"--nope"}} {
			if code, _, _ := device(t, getenv, args...); code != 2 {
				t.Errorf("%q: exit %d, want 2", args, code)
			}
		}
	})
}
