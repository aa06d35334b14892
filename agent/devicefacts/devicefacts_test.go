package devicefacts

import (
	"context"
	"strings"
	"testing"

	"github.com/vlmfleet/vlmfleet/agent/devicefacts/fakehw"
	"github.com/vlmfleet/vlmfleet/protocol"
)

func hasWarning(f protocol.DeviceFacts, sub string) bool {
	for _, w := range f.Warnings {
		if strings.Contains(w, sub) {
			return true
		}
	}
	return false
}

func TestDetectOrinNX(t *testing.T) {
	root, path := scenario(t, "orin-nx", fakehw.OrinNX())
	f := Detect(context.Background(), Options{SysRoot: root, Path: path})
	if f.Kind != protocol.DeviceJetson || f.Name != "Jetson Orin NX" {
		t.Fatalf("kind %q name %q, want jetson / Jetson Orin NX", f.Kind, f.Name)
	}
	j := f.Jetson
	if j == nil {
		t.Fatal("no Jetson facts")
	}
	if j.Model != "NVIDIA Jetson Orin NX Engineering Reference Developer Kit" {
		t.Errorf("model %q: the NUL terminator must go", j.Model)
	}
	if j.L4T != "36.4.3" || j.JetPack != "6.2" {
		t.Errorf("L4T %q JetPack %q, want 36.4.3 / 6.2", j.L4T, j.JetPack)
	}
	if j.PowerMode != "MAXN" {
		t.Errorf("power mode %q, want MAXN", j.PowerMode)
	}
	if j.ClocksPinned == nil || !*j.ClocksPinned {
		t.Errorf("clocks pinned %v, want true (min == max on CPU and GPU)", j.ClocksPinned)
	}
	if j.MemoryMB != 15656 {
		t.Errorf("memory %d MB, want 15656", j.MemoryMB)
	}
	if len(f.GPUs) != 0 {
		t.Errorf("a Jetson has no dGPU facts, got %+v", f.GPUs)
	}
	if f.Host.Arch == "" || f.Host.Cores == 0 {
		t.Errorf("host facts missing: %+v", f.Host)
	}
	for _, w := range f.Warnings {
		if !strings.Contains(w, "host") && !strings.Contains(w, "CPU") && !strings.Contains(w, "RAM") {
			t.Errorf("unexpected warning %q", w)
		}
	}
}

func TestDetectAGXOrin(t *testing.T) {
	root, path := scenario(t, "agx-orin", fakehw.AGXOrin())
	f := Detect(context.Background(), Options{SysRoot: root, Path: path})
	if f.Kind != protocol.DeviceJetson || f.Name != "Jetson AGX Orin" || f.Jetson == nil {
		t.Fatalf("got %+v", f)
	}
	j := f.Jetson
	if j.L4T != "35.5.0" || j.JetPack != "5.1.3" || j.PowerMode != "MODE_30W" || j.MemoryMB != 62841 {
		t.Errorf("got %+v", j)
	}
	if j.ClocksPinned == nil || *j.ClocksPinned {
		t.Errorf("clocks pinned %v, want false (min < max)", j.ClocksPinned)
	}
}

func TestDetectJetsonWithoutTools(t *testing.T) {
	root, path := scenario(t, "orin-nx", fakehw.Config{})
	f := Detect(context.Background(), Options{SysRoot: root, Path: path})
	if f.Kind != protocol.DeviceJetson || f.Jetson == nil || f.Jetson.PowerMode != "" {
		t.Fatalf("got %+v", f)
	}
	if !hasWarning(f, "nvpmodel not found") {
		t.Errorf("want a warning about nvpmodel, got %q", f.Warnings)
	}
}

func TestDetectRTXPro6000MaxQ(t *testing.T) {
	root, path := scenario(t, "x86-workstation", fakehw.RTXPro6000MaxQ())
	f := Detect(context.Background(), Options{SysRoot: root, Path: path})
	if f.Kind != protocol.DeviceDGPU || f.Name != "RTX PRO 6000 Max-Q" {
		t.Fatalf("kind %q name %q, want dgpu / RTX PRO 6000 Max-Q (warnings %q)", f.Kind, f.Name, f.Warnings)
	}
	want := protocol.GPUFacts{
		Index: 0, Name: "NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition",
		UUID: "GPU-2f6e3c1a-8d4b-4e6f-9a1c-3b5d7e9f0a12", Driver: "580.65.06", CUDA: "13.0",
		MemoryMB: 97887, DefaultPowerLimitW: 300, MaxPowerLimitW: 300, ComputeCap: "12.0",
	}
	if len(f.GPUs) != 1 || f.GPUs[0] != want {
		t.Errorf("GPUs %+v\nwant %+v", f.GPUs, want)
	}
	if f.Jetson != nil {
		t.Errorf("no Jetson facts on a workstation, got %+v", f.Jetson)
	}
}

func TestDetectProbesOlderDriver(t *testing.T) {
	cfg := fakehw.RTXPro6000Pair()
	cfg.SMI.Unsupported = append(cfg.SMI.Unsupported, "compute_cap")
	root, path := scenario(t, "x86-workstation", cfg)
	f := Detect(context.Background(), Options{SysRoot: root, Path: path})
	if f.Kind != protocol.DeviceDGPU || len(f.GPUs) != 2 {
		t.Fatalf("got %+v", f)
	}
	if f.Name != "RTX PRO 6000" {
		t.Errorf("name %q, want RTX PRO 6000", f.Name)
	}
	if f.GPUs[1].Index != 1 || f.GPUs[1].MaxPowerLimitW != 600 || f.GPUs[1].CUDA != "12.8" {
		t.Errorf("GPU 1 %+v", f.GPUs[1])
	}
	if f.GPUs[0].ComputeCap != "" || !hasWarning(f, "answers only") {
		t.Errorf("compute_cap should be dropped with a warning: %+v %q", f.GPUs[0], f.Warnings)
	}
}

func TestDetectBareHost(t *testing.T) {
	root, path := scenario(t, "x86-workstation", fakehw.Config{})
	f := Detect(context.Background(), Options{SysRoot: root, Path: path})
	if f.Kind != protocol.DeviceCPU || f.Name == "" || f.Jetson != nil || len(f.GPUs) != 0 {
		t.Fatalf("got %+v", f)
	}
	if !hasWarning(f, "nvidia-smi not found") {
		t.Errorf("want a warning about nvidia-smi, got %q", f.Warnings)
	}
}

func TestDetectEmptySysroot(t *testing.T) {
	// Nothing to read at all: still facts, never a panic.
	f := Detect(context.Background(), Options{SysRoot: t.TempDir(), Path: t.TempDir()})
	if f.Kind != protocol.DeviceCPU || f.Host.Arch == "" {
		t.Fatalf("got %+v", f)
	}
}

func TestSimulated(t *testing.T) {
	for _, tc := range []struct {
		name     string
		jetsonMB int
		gpuMaxW  float64
	}{
		{"Jetson Orin NX", 15656, 0},
		{"Jetson AGX Orin", 30536, 0},
		{"RTX PRO 6000", 0, 600},
		{"RTX PRO 6000 Max-Q", 0, 300},
	} {
		f := Simulated(tc.name)
		if f.Kind != protocol.DeviceSimulated || f.Name != tc.name {
			t.Errorf("%s: kind %q name %q", tc.name, f.Kind, f.Name)
		}
		if len(f.Warnings) == 0 || f.Warnings[0] != SimulatedNote {
			t.Errorf("%s: not marked simulated: %q", tc.name, f.Warnings)
		}
		if tc.jetsonMB > 0 && (f.Jetson == nil || f.Jetson.MemoryMB != tc.jetsonMB || JetsonDisplayName(f.Jetson.Model) != tc.name) {
			t.Errorf("%s: Jetson facts %+v", tc.name, f.Jetson)
		}
		if tc.gpuMaxW > 0 {
			if len(f.GPUs) != 1 || f.GPUs[0].MaxPowerLimitW != tc.gpuMaxW ||
				GPUDisplayName(f.GPUs[0].Name, f.GPUs[0].MaxPowerLimitW) != tc.name {
				t.Errorf("%s: GPU facts %+v", tc.name, f.GPUs)
			}
		}
		if f.Host.Arch == "" {
			t.Errorf("%s: no host facts", tc.name)
		}
	}
	if f := Simulated("Jetson Thor 9000"); f.Jetson != nil || len(f.GPUs) != 0 || len(f.Warnings) < 2 {
		t.Errorf("unknown simulated device: %+v", f)
	}
}

// The options are the only source: the process's PATH and VLMFLEET_SYSROOT
// are not consulted, so an empty Path finds no tool even where the
// environment would.
func TestDetectReadsOnlyItsOptions(t *testing.T) {
	if _, jetson := JetsonModel(DefaultSysRoot); jetson {
		t.Skip("this host is a Jetson: an empty SysRoot reads its real facts")
	}
	root, path := scenario(t, "orin-nx", fakehw.OrinNX())
	t.Setenv("PATH", path)
	t.Setenv("VLMFLEET_SYSROOT", root)
	f := Detect(context.Background(), Options{SysRoot: t.TempDir()})
	if f.Kind != protocol.DeviceCPU || len(f.GPUs) > 0 {
		t.Errorf("empty Path: kind %q with %d GPUs, want cpu: no tool may come from the process's PATH", f.Kind, len(f.GPUs))
	}
	f = Detect(context.Background(), Options{})
	if f.Kind == protocol.DeviceJetson {
		t.Error("empty SysRoot read $VLMFLEET_SYSROOT's Jetson, want the default root")
	}
}

func TestSysRootOr(t *testing.T) {
	if got := SysRootOr(""); got != DefaultSysRoot {
		t.Errorf(`SysRootOr("") = %q, want %q`, got, DefaultSysRoot)
	}
	if got := SysRootOr("/tmp/fixture"); got != "/tmp/fixture" {
		t.Errorf("SysRootOr kept %q, want /tmp/fixture", got)
	}
}
