package agent_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/vlmfleet/vlmfleet/agent"
	"github.com/vlmfleet/vlmfleet/agent/devicefacts/fakehw"
	"github.com/vlmfleet/vlmfleet/agent/engine"
	"github.com/vlmfleet/vlmfleet/agent/imageset"
	"github.com/vlmfleet/vlmfleet/protocol"
)

func testCtx(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// runPowerAgent runs an agent on the rig's Orin NX that may switch through
// the helper script, until the test ends.
func runPowerAgent(t *testing.T, ctx context.Context, rig *jetsonRig, lab *fakeLab, id string) {
	t.Helper()
	rig.setenv(t)
	cfg := agent.Config{
		ID: id, NATSURL: lab.url, SysRoot: rig.sysroot, LogDir: t.TempDir(),
		Telemetry:         agent.TelemetryConfig{Source: "off"},
		HeartbeatInterval: engine.Duration(50 * time.Millisecond),
		Deployments:       []agent.DeploymentConfig{simDeployment(t, 200)},
		Power:             agent.PowerConfig{Switch: true, Command: rig.helper},
	}
	startAgent(t, ctx, cfg, pathOnly(rig.fakes))
}

// pathOnly is an environment whose PATH holds only dir.
func pathOnly(dir string) func(string) string {
	return func(k string) string {
		if k == "PATH" {
			return dir
		}
		return os.Getenv(k)
	}
}

// waitPower waits for a heartbeat sent after since that reports the
// agent idle in mode.
func (l *fakeLab) waitPower(t *testing.T, ctx context.Context, since time.Time, mode string) {
	t.Helper()
	l.waitBeat(t, ctx, since, "idle in "+mode, func(hb protocol.Heartbeat) bool { return hb.PowerMode == mode })
}

func (l *fakeLab) waitBeat(t *testing.T, ctx context.Context, since time.Time, what string, ok func(protocol.Heartbeat) bool) {
	t.Helper()
	for {
		select {
		case hb := <-l.beats:
			if hb.Time.After(since) && hb.State == protocol.AgentIdle && ok(hb) {
				return
			}
		case <-ctx.Done():
			t.Fatalf("no heartbeat reported the agent %s", what)
		}
	}
}

// The built-in pictures, drawn once for the tests' agents (slow under
// the race detector).
var (
	imagesOnce sync.Once
	images     *imageset.Set
	imagesErr  error
)

func builtinImages(t *testing.T) *imageset.Set {
	t.Helper()
	imagesOnce.Do(func() { images, imagesErr = imageset.Builtin() })
	if imagesErr != nil {
		t.Fatal(imagesErr)
	}
	return images
}

// startAgent runs an agent until the test ends.
func startAgent(t *testing.T, ctx context.Context, cfg agent.Config, getenv func(string) string) {
	t.Helper()
	a, err := agent.New(cfg, agent.Options{Log: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel), Version: "test", Getenv: getenv,
		Images: builtinImages(t)})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- a.Run(runCtx) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("agent: %v", err)
		}
	})
}

// A sweep over two modes: the agent switches for the first job, switches
// again for the second (queued meanwhile) without going back between, and
// restores once, when no job is left; each run records its mode.
func TestAgentSweepOverTwoModesSwitchesTwiceAndRestoresOnce(t *testing.T) {
	ctx := testCtx(t, 90*time.Second)
	const id = "orin1"
	rig := newJetsonRig(t, nil)
	lab := startFakeLab(t, ctx, id)
	// Both queued before the agent starts, as a sweep queues them.
	lab.submit(t, ctx, protocol.Job{ID: "j1", AgentID: id, Deployment: "d1", Workload: smallWorkload(2), Power: protocol.PowerSetting{Mode: "15W"}})
	lab.submit(t, ctx, protocol.Job{ID: "j2", AgentID: id, Deployment: "d1", Workload: smallWorkload(2), Power: protocol.PowerSetting{Mode: "10W"}})
	runPowerAgent(t, ctx, rig, lab, id)

	hello := <-lab.hellos
	if p := hello.Power; p == nil || p.Mode != "MAXN" || !p.Switchable || strings.Join(p.ModeNames(), ",") != "MAXN,10W,15W,25W" || p.Modes[2].GPUMaxFreqHz != 612000000 {
		t.Fatalf("hello's power: %+v", hello.Power)
	}
	for _, want := range []struct{ job, mode string }{{"j1", "15W"}, {"j2", "10W"}} {
		if st := lab.ended(t, ctx, want.job); st.State != protocol.JobCompleted {
			t.Fatalf("%s: %s %s", want.job, st.State, st.Error)
		}
		run := <-lab.runs
		if run.JobID != want.job || run.Config.PowerMode != want.mode || run.Device.Jetson == nil || run.Device.Jetson.PowerMode != want.mode || run.Config.PowerLimitW != 0 {
			t.Errorf("%s's run: job %s, config power %q, device %+v", want.job, run.JobID, run.Config.PowerMode, run.Device.Jetson)
		}
	}
	ended := time.Now()
	lab.waitPower(t, ctx, ended, "MAXN")
	if got, want := rig.switches(t), []string{"-m 2 15W", "-m 1 10W", "-m 0 MAXN"}; joined(got) != joined(want) {
		t.Errorf("nvpmodel switches %s, want %s", joined(got), joined(want))
	}
}

// A mode the device does not list is refused before anything is
// switched; one that needs a reboot fails the job with the device back in
// its mode; a job that sets nothing records the mode it found.
func TestAgentRefusesAndFailsPowerItCannotSet(t *testing.T) {
	ctx := testCtx(t, 90*time.Second)
	const id = "orin2"
	rig := newJetsonRig(t, func(n *fakehw.NVPModel) { n.RebootIDs = []int{3} })
	lab := startFakeLab(t, ctx, id)
	runPowerAgent(t, ctx, rig, lab, id)
	<-lab.hellos

	lab.submit(t, ctx, protocol.Job{ID: "j1", AgentID: id, Deployment: "d1", Workload: smallWorkload(1), Power: protocol.PowerSetting{Mode: "20W"}})
	st := lab.ended(t, ctx, "j1")
	if st.State != protocol.JobRejected || !strings.Contains(st.Error, `power "20W" on agent orin2: it has no power mode "20W"; its modes: MAXN, 10W, 15W, 25W`) {
		t.Errorf("unknown mode: %s %q", st.State, st.Error)
	}
	lab.submit(t, ctx, protocol.Job{ID: "j2", AgentID: id, Deployment: "d1", Workload: smallWorkload(1), Power: protocol.PowerSetting{Mode: "25W"}})
	st = lab.ended(t, ctx, "j2")
	if st.State != protocol.JobFailed || !strings.Contains(st.Error, "needs a reboot; not switched; the device stays in MAXN") {
		t.Errorf("a mode that needs a reboot: %s %q", st.State, st.Error)
	}
	lab.submit(t, ctx, protocol.Job{ID: "j3", AgentID: id, Deployment: "d1", Workload: smallWorkload(1), Power: protocol.PowerSetting{LimitW: 300}})
	st = lab.ended(t, ctx, "j3")
	if st.State != protocol.JobRejected || !strings.Contains(st.Error, "a Jetson takes power_modes") {
		t.Errorf("a limit on a Jetson: %s %q", st.State, st.Error)
	}
	lab.submit(t, ctx, protocol.Job{ID: "j4", AgentID: id, Deployment: "d1", Workload: smallWorkload(1)})
	if st := lab.ended(t, ctx, "j4"); st.State != protocol.JobCompleted {
		t.Fatalf("as found: %s %s", st.State, st.Error)
	}
	if run := <-lab.runs; run.JobID != "j4" || run.Config.PowerMode != "MAXN" {
		t.Errorf("the run as found: job %s, power mode %q", run.JobID, run.Config.PowerMode)
	}
	if got, want := rig.switches(t), []string{"-m 3 25W declined reboot"}; joined(got) != joined(want) {
		t.Errorf("nvpmodel calls %s, want %s", joined(got), joined(want))
	}
}

// A job cancelled while it measures in a mode it set puts the device back.
func TestAgentRestoresAfterACancel(t *testing.T) {
	ctx := testCtx(t, 90*time.Second)
	const id = "orin3"
	rig := newJetsonRig(t, nil)
	lab := startFakeLab(t, ctx, id)
	runPowerAgent(t, ctx, rig, lab, id)
	<-lab.hellos
	lab.submit(t, ctx, protocol.Job{ID: "j1", AgentID: id, Deployment: "d1", Workload: smallWorkload(100000), Power: protocol.PowerSetting{Mode: "15W"}})
	lab.waitState(t, ctx, "j1", protocol.JobRunning)
	nc, _ := testutilConnect(t, lab.url)
	data, _ := json.Marshal(protocol.Cancel{Schema: 1, JobID: "j1", Reason: "test"})
	if err := nc.Publish(protocol.ControlSubject(id), data); err != nil {
		t.Fatal(err)
	}
	if st := lab.ended(t, ctx, "j1"); st.State != protocol.JobCancelled {
		t.Fatalf("cancel: %s %s", st.State, st.Error)
	}
	lab.waitPower(t, ctx, time.Now(), "MAXN")
	if got, want := rig.switches(t), []string{"-m 2 15W", "-m 0 MAXN"}; joined(got) != joined(want) {
		t.Errorf("nvpmodel switches %s, want %s", joined(got), joined(want))
	}
}

// A simulated Jetson (--simulate, the demo) switches in memory, with no
// configuration to allow it, and records the mode it measured in.
func TestSimulatedAgentSwitchesItsModes(t *testing.T) {
	ctx := testCtx(t, 90*time.Second)
	const id = "sim-orin"
	lab := startFakeLab(t, ctx, id)
	deps, err := agent.SimulatedDeployments("Jetson Orin NX", 200)
	if err != nil {
		t.Fatal(err)
	}
	startAgent(t, ctx, agent.Config{ID: id, NATSURL: lab.url, LogDir: t.TempDir(), Simulate: "Jetson Orin NX", SimSpeedup: 200,
		HeartbeatInterval: engine.Duration(50 * time.Millisecond), Deployments: deps[:1]}, nil)
	hello := <-lab.hellos
	if p := hello.Power; p == nil || !p.Switchable || !p.HasMode("10W") || p.Mode == "10W" {
		t.Fatalf("hello's power: %+v", hello.Power)
	}
	found := hello.Power.Mode
	lab.submit(t, ctx, protocol.Job{ID: "j1", AgentID: id, Deployment: deps[0].ID, Workload: smallWorkload(1), Power: protocol.PowerSetting{Mode: "10W"}})
	if st := lab.ended(t, ctx, "j1"); st.State != protocol.JobCompleted {
		t.Fatalf("j1: %s %s", st.State, st.Error)
	}
	if run := <-lab.runs; run.Config.PowerMode != "10W" || run.Device.Jetson == nil || run.Device.Jetson.PowerMode != "10W" || !run.Simulated {
		t.Errorf("the run: power mode %q, device %+v", run.Config.PowerMode, run.Device.Jetson)
	}
	lab.waitPower(t, ctx, time.Now(), found)
}

// On an NVIDIA host a job's power limit is set on the GPU through the
// helper, recorded with the run, and put back.
func TestAgentSetsAGPUPowerLimit(t *testing.T) {
	ctx := testCtx(t, 90*time.Second)
	const id = "rtx1"
	fake := buildOnce(t, "fakehw", "github.com/vlmfleet/vlmfleet/agent/devicefacts/fakehw/cmd/fakehw")
	root, fakes := fakehw.Scenario(t, fake, "x86-workstation", fakehw.RTXPro6000MaxQ())
	t.Setenv("PATH", fakes+string(os.PathListSeparator)+os.Getenv("PATH"))
	rig := newJetsonRig(t, nil) // for the helper's path
	lab := startFakeLab(t, ctx, id)
	deps, err := agent.SimulatedDeployments("RTX PRO 6000 Max-Q", 200)
	if err != nil {
		t.Fatal(err)
	}
	d := deps[0]
	d.ID = "d1"
	startAgent(t, ctx, agent.Config{ID: id, NATSURL: lab.url, SysRoot: root, LogDir: t.TempDir(),
		Telemetry: agent.TelemetryConfig{Source: "off"}, HeartbeatInterval: engine.Duration(50 * time.Millisecond),
		Deployments: []agent.DeploymentConfig{d}, Power: agent.PowerConfig{Switch: true, Command: rig.helper}}, pathOnly(fakes))
	hello := <-lab.hellos
	if p := hello.Power; p == nil || p.LimitW != 300 || p.MinLimitW != 150 || p.MaxLimitW != 300 || !p.Switchable || len(p.Modes) != 0 {
		t.Fatalf("hello's power: %+v", hello.Power)
	}
	lab.submit(t, ctx, protocol.Job{ID: "j1", AgentID: id, Deployment: "d1", Workload: smallWorkload(1), Power: protocol.PowerSetting{LimitW: 200}})
	if st := lab.ended(t, ctx, "j1"); st.State != protocol.JobCompleted {
		t.Fatalf("j1: %s %s", st.State, st.Error)
	}
	if run := <-lab.runs; run.Config.PowerLimitW != 200 || run.Config.PowerMode != "" || len(run.Device.GPUs) != 1 || run.Device.GPUs[0].PowerLimitW != 200 {
		t.Errorf("the run: power limit %g, mode %q, GPUs %+v", run.Config.PowerLimitW, run.Config.PowerMode, run.Device.GPUs)
	}
	lab.waitBeat(t, ctx, time.Now(), "idle at 300 W", func(hb protocol.Heartbeat) bool { return hb.PowerLimitW == 300 })
	b, err := os.ReadFile(filepath.Join(fakes, fakehw.SMILog))
	if err != nil || string(b) != "-i 0 -pl 200\n-i 0 -pl 300\n" {
		t.Errorf("nvidia-smi -pl calls %q, %v", b, err)
	}
	lab.submit(t, ctx, protocol.Job{ID: "j2", AgentID: id, Deployment: "d1", Workload: smallWorkload(1), Power: protocol.PowerSetting{LimitW: 100}})
	if st := lab.ended(t, ctx, "j2"); st.State != protocol.JobRejected || !strings.Contains(st.Error, "power limit 100 W is outside its GPU's range 150-300 W") {
		t.Errorf("j2: %s %q", st.State, st.Error)
	}
}
