package power

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/agent/devicefacts/fakehw"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// helperScript is the root helper deploy/install.sh installs; the tests
// run it as the agent's power.command, with the fakes first on its PATH.
func helperScript(t testing.TB) []string {
	t.Helper()
	p, err := filepath.Abs("../../deploy/vlmfleet-power")
	if err != nil {
		t.Fatal(err)
	}
	return []string{"/bin/sh", p}
}

// orinNX lays out a fake Orin NX: the conf, the fake nvpmodel (in MAXN)
// that writes the GPU's devfreq max_freq, and the helper script's
// environment. It returns the switcher's options and the fakes' directory.
func orinNX(t *testing.T, tweak func(*fakehw.NVPModel)) (JetsonOptions, string) {
	t.Helper()
	data, err := os.ReadFile("testdata/nvpmodel_orin_nx.conf")
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	confPath := filepath.Join(root, "etc", "nvpmodel.conf")
	devfreq := "/sys/devices/platform/bus@0/17000000.gpu/devfreq/17000000.gpu/max_freq"
	for p, b := range map[string][]byte{confPath: data, filepath.Join(root, devfreq): []byte("918000000\n")} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	conf, err := ParseConf(confPath, data)
	if err != nil {
		t.Fatal(err)
	}
	nvp := &fakehw.NVPModel{Mode: "MAXN", ID: 0, Modes: conf.Modes, MaxFreqFile: filepath.Join(root, devfreq), UncappedHz: 918000000}
	if tweak != nil {
		tweak(nvp)
	}
	_, bin := fakehw.Scenario(t, fakeBinary, "", fakehw.Config{NVPModel: nvp})
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("VLMFLEET_NVPMODEL_CONF", confPath)
	return JetsonOptions{NVPModel: filepath.Join(bin, "nvpmodel"), Conf: conf, SysRoot: root,
		Helper: Command{Argv: helperScript(t)}, Settle: 5 * time.Second}, bin
}

// switches reads the fake nvpmodel's log of -m calls.
func switches(t *testing.T, dir string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, fakehw.NVPModelLog))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// A guarded switch goes through the helper to nvpmodel, waits for the
// cap on the GPU clock, writes down what it found (0600) and puts it back.
func TestJetsonSwitchesAndTheGuardRestores(t *testing.T) {
	ctx := testContext(t)
	opt, fakes := orinNX(t, nil)
	j := NewJetson(opt)
	pc, err := j.Control(ctx)
	if err != nil || pc.Mode != "MAXN" || !pc.Switchable || len(pc.Modes) != 4 {
		t.Fatalf("control %+v, %v", pc, err)
	}
	g := NewGuard(t.TempDir(), j)
	if err := g.Switch(ctx, protocol.PowerSetting{Mode: "15W"}); err != nil {
		t.Fatal(err)
	}
	if cur, err := j.Current(ctx); err != nil || cur.Mode != "15W" {
		t.Fatalf("after the switch: %+v, %v", cur, err)
	}
	if b, _ := os.ReadFile(j.maxFreq); strings.TrimSpace(string(b)) != "612000000" {
		t.Errorf("GPU max_freq %q after the switch to 15W, want the cap 612000000", b)
	}
	fi, err := os.Stat(g.Path())
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("guard file: %v, %v", fi, err)
	}
	// A second switch keeps what was found first.
	if err := g.Switch(ctx, protocol.PowerSetting{Mode: "10W"}); err != nil {
		t.Fatal(err)
	}
	restored, err := g.Restore(ctx)
	if err != nil || restored.Mode != "MAXN" {
		t.Fatalf("restore: %v, %v", restored, err)
	}
	if g.Pending() {
		t.Error("the guard's file is still there after the restore")
	}
	want := []string{"-m 2 15W", "-m 1 10W", "-m 0 MAXN"}
	if got := switches(t, fakes); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("nvpmodel switches %q, want %q", got, want)
	}
}

// A mode that needs a reboot, one nvpmodel fails to set and one the
// device does not list are errors that say so; the device stays as it was.
func TestJetsonRefusesWhatItCannotSwitchTo(t *testing.T) {
	ctx := testContext(t)
	opt, fakes := orinNX(t, func(n *fakehw.NVPModel) { n.RebootIDs, n.FailIDs = []int{3}, []int{1} })
	j := NewJetson(opt)
	g := NewGuard(t.TempDir(), j)
	for _, tc := range []struct{ mode, want string }{
		{"25W", "switch to power mode 25W: mode 25W (id 3) needs a reboot; not switched; the device stays in MAXN"},
		{"10W", "simulated failure; the device stays in MAXN"},
		{"20W", `power mode "20W": this device's modes are MAXN, 10W, 15W, 25W`},
	} {
		mode, want := tc.mode, tc.want
		err := g.Switch(ctx, protocol.PowerSetting{Mode: mode})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("switch to %s: %v, want %q", mode, err, want)
		}
		if cur, _ := j.Current(ctx); cur.Mode != "MAXN" {
			t.Errorf("after %s: the device is in %q", mode, cur.Mode)
		}
		if g.Pending() {
			t.Errorf("after %s: the guard's file is left", mode)
		}
	}
	want := []string{"-m 3 25W declined reboot", "-m 1 10W failed"}
	if got := switches(t, fakes); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("nvpmodel calls %q, want %q", got, want)
	}
	// Switching off in the configuration: the reason, and no call.
	opt.Helper, opt.Reason = nil, "power.switch is off"
	if err := NewJetson(opt).Set(ctx, protocol.PowerSetting{Mode: "15W"}); err == nil || !strings.Contains(err.Error(), "may not switch: power.switch is off") {
		t.Errorf("switch with no helper: %v", err)
	}
}

// A GPU clock that never comes down to the mode's cap ends the wait with
// an error naming the file and both figures.
func TestJetsonWaitsForTheGPUCapAndGivesUp(t *testing.T) {
	ctx := testContext(t)
	opt, _ := orinNX(t, func(n *fakehw.NVPModel) { n.MaxFreqFile = "" })
	opt.Settle = 300 * time.Millisecond
	err := NewJetson(opt).Set(ctx, protocol.PowerSetting{Mode: "15W"})
	if err == nil || !strings.Contains(err.Error(), "switched to power mode 15W, but after 300ms") ||
		!strings.Contains(err.Error(), "max_freq reads 918000000 Hz, not yet the mode's GPU cap 612000000 Hz") {
		t.Fatalf("settle: %v", err)
	}
}
