package agent_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/vlmfleet/vlmfleet/agent"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// simConfig is an agent configuration whose deployments are the given
// engine blocks, in YAML flow style.
func simConfig(t *testing.T, natsURL string, engines ...string) agent.Config {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "id: simcfg\nnats_url: %s\nlog_dir: %s\nheartbeat_interval: 50ms\ndeployments:\n", natsURL, t.TempDir())
	for i, e := range engines {
		fmt.Fprintf(&b, "  - id: d%d\n    model: Qwen3-VL-4B-Instruct\n    engine: %s\n", i+1, e)
	}
	cfg, err := agent.ParseConfig([]byte(b.String()))
	if err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	return cfg
}

const orinNXEngine = `{kind: sim, sim_device: Jetson Orin NX, sim_model: Qwen3-VL-4B-Instruct, sim_quantization: Q8_0, sim_engine: llama.cpp, sim_speedup: 200}`

// A configuration whose deployment is of kind sim makes the agent the
// device it simulates, as --simulate does: the hello names that device,
// says simulated, and lists its power modes, which a job may switch.
func TestConfigOfSimDeploymentsAnnouncesTheSimulatedDevice(t *testing.T) {
	ctx := testCtx(t, 90*time.Second)
	lab := startFakeLab(t, ctx, "simcfg")
	startAgent(t, ctx, simConfig(t, lab.url, orinNXEngine), nil)
	hello := <-lab.hellos
	if !hello.Simulated || hello.Device.Name != "Jetson Orin NX" || hello.Device.Kind != protocol.DeviceSimulated || hello.Device.Jetson == nil {
		t.Errorf("hello: simulated %v, device %q (%s), jetson %+v; want the simulated Jetson Orin NX",
			hello.Simulated, hello.Device.Name, hello.Device.Kind, hello.Device.Jetson)
	}
	if p := hello.Power; p == nil || !p.Switchable || !p.HasMode("15W") || !p.HasMode("25W") {
		t.Fatalf("hello's power: %+v, want the Orin NX's modes, switchable", hello.Power)
	}
	lab.submit(t, ctx, protocol.Job{ID: "j1", AgentID: "simcfg", Deployment: "d1", Workload: smallWorkload(1), Power: protocol.PowerSetting{Mode: "15W"}})
	if st := lab.ended(t, ctx, "j1"); st.State != protocol.JobCompleted {
		t.Fatalf("j1: %s %s", st.State, st.Error)
	}
	if run := <-lab.runs; !run.Simulated || run.Config.PowerMode != "15W" || run.Device.Name != "Jetson Orin NX" {
		t.Errorf("the run: simulated %v, power mode %q, device %q", run.Simulated, run.Config.PowerMode, run.Device.Name)
	}
}

// An agent is one device: sim deployments of two devices, or sim beside a
// real engine, are refused, naming the entry and the field.
func TestConfigMixingDevicesIsRefused(t *testing.T) {
	for name, tc := range map[string]struct {
		engines []string
		want    string
	}{
		"two sim devices": {[]string{orinNXEngine, strings.Replace(orinNXEngine, "Jetson Orin NX", "Jetson AGX Orin", 1)},
			`deployments[1].engine.sim_device: "Jetson AGX Orin", but deployments[0] simulates "Jetson Orin NX"; an agent is one device`},
		"sim and real": {[]string{`{kind: external, url: "http://127.0.0.1:9/v1"}`, orinNXEngine},
			`deployments[0].engine.kind: "external" beside deployments[1].engine.kind: sim; an agent is one device`},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := simConfig(t, "nats://127.0.0.1:4222", tc.engines...)
			_, err := agent.New(cfg, agent.Options{Log: zerolog.Nop()})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("agent.New: %v\nwant an error containing %q", err, tc.want)
			}
		})
	}
}
