package agent_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/agent/power"
	"github.com/vlmfleet/vlmfleet/internal/testutil/proctest"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// startAgentProc runs the real vlmfleet agent, a process of its own.
func startAgentProc(t *testing.T, bin, config, logPath string, env []string) *proctest.Proc {
	t.Helper()
	cmd := exec.Command(bin, "agent", "--config", config)
	cmd.Env = append(os.Environ(), env...)
	return proctest.Start(t, "agent", logPath, cmd)
}

// An agent SIGKILLed between switching the device for a job and putting it
// back puts it back at its next start, before it announces itself.
func TestAgentKilledMidJobRestoresAtItsNextStart(t *testing.T) {
	ctx := testCtx(t, 120*time.Second)
	const id = "orin-kill"
	bin := buildOnce(t, "vlmfleet", "github.com/vlmfleet/vlmfleet/cmd/vlmfleet")
	rig := newJetsonRig(t, nil)
	lab := startFakeLab(t, ctx, id)
	dir := t.TempDir()
	spool := filepath.Join(dir, "spool")
	d := simDeployment(t, 1)
	config := filepath.Join(dir, "agent.yaml")
	yaml := fmt.Sprintf(`id: %s
nats_url: %s
sysroot: %s
log_dir: %s
spool_dir: %s
heartbeat_interval: 100ms
telemetry: {source: "off"}
deployments:
  - id: d1
    model: %q
    engine: {kind: sim, sim_device: %q, sim_model: %q, sim_quantization: %q, sim_engine: %q, sim_speedup: 1}
power:
  switch: true
  command: [%q, %q]
`, id, lab.url, rig.sysroot, dir, spool, d.Model, d.Engine.SimDevice, d.Engine.SimModel, d.Engine.SimQuantization, d.Engine.SimEngine, rig.helper[0], rig.helper[1])
	if err := os.WriteFile(config, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "agent.log")
	lab.submit(t, ctx, protocol.Job{ID: "j1", AgentID: id, Deployment: "d1", Workload: smallWorkload(100000), Power: protocol.PowerSetting{Mode: "15W"}})

	first := startAgentProc(t, bin, config, logPath, rig.env)
	lab.waitState(t, ctx, "j1", protocol.JobRunning)
	if first.Exited() {
		t.Fatal("the agent exited before it was killed")
	}
	first.Kill()
	if got, want := rig.switches(t), []string{"-m 2 15W"}; joined(got) != joined(want) {
		t.Fatalf("before the kill: nvpmodel switches %s, want %s", joined(got), joined(want))
	}
	if _, err := os.Stat(filepath.Join(spool, power.GuardFile)); err != nil {
		t.Fatalf("no guard file left by the killed agent: %v", err)
	}

	restarted := time.Now()
	startAgentProc(t, bin, config, logPath, rig.env)
	var hello protocol.AgentHello
	for hello.StartedAt.Before(restarted) {
		select {
		case hello = <-lab.hellos:
		case <-ctx.Done():
			t.Fatal("the restarted agent never announced itself")
		}
	}
	// The restore came first: the hello already says MAXN.
	if hello.Power == nil || hello.Power.Mode != "MAXN" || hello.Device.Jetson == nil || hello.Device.Jetson.PowerMode != "MAXN" {
		t.Errorf("the restarted agent's hello: power %+v, device %+v", hello.Power, hello.Device.Jetson)
	}
	if got, want := rig.switches(t), []string{"-m 2 15W", "-m 0 MAXN"}; joined(got) != joined(want) {
		t.Errorf("after the restart: nvpmodel switches %s, want %s", joined(got), joined(want))
	}
	if _, err := os.Stat(filepath.Join(spool, power.GuardFile)); !os.IsNotExist(err) {
		t.Errorf("the guard file is still there after the restore: %v", err)
	}
	if b, _ := os.ReadFile(logPath); !strings.Contains(string(b), "restoring before announcing") {
		t.Errorf("the agent did not say that it restored")
	}
}
