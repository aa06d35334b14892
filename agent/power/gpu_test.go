package power

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vlmfleet/vlmfleet/agent/devicefacts/fakehw"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// gpuPair is two 600 W GPUs (150-600 W) behind the fake nvidia-smi.
func gpuPair(t *testing.T, limit1 string) (GPUOptions, string) {
	t.Helper()
	gpu := func(i, limit string) map[string]string {
		return map[string]string{"index": i, "pci.bus_id": "00000000:0" + i + ":00.0", "power.limit": limit,
			"power.min_limit": "150.00", "power.max_limit": "600.00"}
	}
	_, bin := fakehw.Scenario(t, fakeBinary, "", fakehw.Config{SMI: &fakehw.SMI{Driver: "580.65.06", CUDA: "13.0",
		GPUs: []map[string]string{gpu("0", "600.00"), gpu("1", limit1)}}})
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	return GPUOptions{SMI: filepath.Join(bin, "nvidia-smi"), Helper: Command{Argv: helperScript(t)}}, bin
}

func TestGPULimitSwitchesEveryGPUWithinItsRange(t *testing.T) {
	ctx := testContext(t)
	opt, fakes := gpuPair(t, "600.00")
	g := NewGPU(opt)
	pc, err := g.Control(ctx)
	if err != nil || pc.LimitW != 600 || pc.MinLimitW != 150 || pc.MaxLimitW != 600 || !pc.Switchable {
		t.Fatalf("control %+v, %v", pc, err)
	}
	guard := NewGuard(t.TempDir(), g)
	if err := guard.Switch(ctx, protocol.PowerSetting{LimitW: 300}); err != nil {
		t.Fatal(err)
	}
	if cur, err := g.Current(ctx); err != nil || cur.LimitW != 300 {
		t.Fatalf("after the switch: %+v, %v", cur, err)
	}
	if err := guard.Switch(ctx, protocol.PowerSetting{LimitW: 100}); err == nil || !strings.Contains(err.Error(), "power limit 100 W: GPU 0 allows 150-600 W; the device is back in 600 W limit") {
		t.Errorf("out of range: %v", err)
	}
	b, err := os.ReadFile(filepath.Join(fakes, fakehw.SMILog))
	if err != nil {
		t.Fatal(err)
	}
	want := "-i 0 -pl 300\n-i 1 -pl 300\n-i 0 -pl 600\n-i 1 -pl 600\n"
	if string(b) != want {
		t.Errorf("nvidia-smi -pl calls:\n%s\nwant:\n%s", b, want)
	}
	// Only the GPUs the engines use.
	opt.GPUs = []int{1}
	if err := NewGPU(opt).Set(ctx, protocol.PowerSetting{LimitW: 450}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(fakes, fakehw.SMILog)); !strings.HasSuffix(string(b), "-pl 600\n-i 1 -pl 450\n") {
		t.Errorf("power.gpus [1] set:\n%s", b)
	}
	opt.GPUs = []int{7}
	if _, err := NewGPU(opt).Control(ctx); err == nil || !strings.Contains(err.Error(), "power.gpus names GPU 7") {
		t.Errorf("unknown GPU: %v", err)
	}
}

// GPUs at different limits cannot be put back with one figure: the
// switcher says so rather than lose one.
func TestGPULimitRefusesGPUsAtDifferentLimits(t *testing.T) {
	ctx := testContext(t)
	opt, _ := gpuPair(t, "450.00")
	err := NewGuard(t.TempDir(), NewGPU(opt)).Switch(ctx, protocol.PowerSetting{LimitW: 300})
	if err == nil || !strings.Contains(err.Error(), "GPU 0 has a power limit of 600 W and GPU 1 of 450 W") {
		t.Fatalf("switch: %v", err)
	}
}
