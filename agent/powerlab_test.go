package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/vlmfleet/vlmfleet/agent"
	"github.com/vlmfleet/vlmfleet/agent/devicefacts/fakehw"
	"github.com/vlmfleet/vlmfleet/agent/power"
	"github.com/vlmfleet/vlmfleet/controller"
	"github.com/vlmfleet/vlmfleet/internal/testutil"
	"github.com/vlmfleet/vlmfleet/internal/testutil/natstest"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// Built on first use by the tests that need them, removed by TestMain.
var (
	buildMu  sync.Mutex
	buildDir string
	built    = map[string]string{}
)

// buildOnce builds pkg into the tests' build directory, once.
func buildOnce(t *testing.T, name, pkg string) string {
	t.Helper()
	buildMu.Lock()
	defer buildMu.Unlock()
	if p, ok := built[name]; ok {
		return p
	}
	if buildDir == "" {
		d, err := os.MkdirTemp("", "vlmfleet-agent-test-")
		if err != nil {
			t.Fatal(err)
		}
		buildDir = d
	}
	out := filepath.Join(buildDir, name)
	if b, err := exec.Command("go", "build", "-o", out, pkg).CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, b)
	}
	built[name] = out
	return out
}

// fakeLab is a NATS server with the controller's streams, and the
// controller's part played by the test: it answers the agent's handshake
// (the agent then makes its own job consumer) and hears what the agent
// reports.
type fakeLab struct {
	url    string
	js     jetstream.JetStream
	states chan protocol.JobStateChange
	hellos chan protocol.AgentHello
	beats  chan protocol.Heartbeat
	runs   chan protocol.Run
}

func startFakeLab(t *testing.T, ctx context.Context, agentID string) *fakeLab {
	t.Helper()
	ns := natstest.Start(t, &server.Options{JetStream: true, StoreDir: t.TempDir(), NoLog: true})
	url := "nats://" + ns.Addr().String()
	nc, js := testutil.ConnectJS(t, url)
	for _, cfg := range []jetstream.StreamConfig{controller.JobsStreamConfig(), controller.EventsStreamConfig()} {
		if _, err := js.CreateOrUpdateStream(ctx, cfg); err != nil {
			t.Fatal(err)
		}
	}
	l := &fakeLab{url: url, js: js, states: make(chan protocol.JobStateChange, 64), hellos: make(chan protocol.AgentHello, 8),
		beats: make(chan protocol.Heartbeat, 256), runs: make(chan protocol.Run, 16)}
	sub := func(kind string, f func(*nats.Msg)) {
		if _, err := nc.Subscribe(protocol.AgentSubject(agentID, kind), f); err != nil {
			t.Fatal(err)
		}
	}
	sub(protocol.KindHeartbeat, func(m *nats.Msg) {
		if m.Reply != "" {
			_ = m.Respond([]byte(`{"schema":1,"drained":false}`))
			return
		}
		var hb protocol.Heartbeat
		if json.Unmarshal(m.Data, &hb) == nil {
			select {
			case l.beats <- hb:
			default:
			}
		}
	})
	sub(protocol.KindState, func(m *nats.Msg) { decodeInto(t, m.Data, l.states) })
	sub(protocol.KindHello, func(m *nats.Msg) { decodeInto(t, m.Data, l.hellos) })
	sub(protocol.KindResult, func(m *nats.Msg) {
		var rm protocol.ResultMessage
		if json.Unmarshal(m.Data, &rm) == nil && rm.Final {
			l.runs <- rm.Run
		}
	})
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return l
}

func decodeInto[T any](t *testing.T, data []byte, ch chan T) {
	var v T
	if err := json.Unmarshal(data, &v); err != nil {
		t.Errorf("decode %T: %v", v, err)
		return
	}
	ch <- v
}

// submit queues a job for the agent, as the controller does.
func (l *fakeLab) submit(t *testing.T, ctx context.Context, job protocol.Job) {
	t.Helper()
	job.Schema = protocol.SchemaVersion
	job.CreatedAt = time.Now().UTC()
	data, err := json.Marshal(job)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.js.Publish(ctx, protocol.JobSubject(job.AgentID), data); err != nil {
		t.Fatal(err)
	}
}

// ended waits for the job's last state.
func (l *fakeLab) ended(t *testing.T, ctx context.Context, jobID string) protocol.JobStateChange {
	t.Helper()
	for {
		select {
		case st := <-l.states:
			if st.JobID == jobID && st.State.Terminal() {
				return st
			}
		case <-ctx.Done():
			t.Fatalf("job %s never ended", jobID)
		}
	}
}

// waitState waits for the job to reach state.
func (l *fakeLab) waitState(t *testing.T, ctx context.Context, jobID string, state protocol.JobState) {
	t.Helper()
	for {
		select {
		case st := <-l.states:
			if st.JobID == jobID && st.State == state {
				return
			}
		case <-ctx.Done():
			t.Fatalf("job %s never reached %s", jobID, state)
		}
	}
}

// jetsonRig is a fake Orin NX: a fixture system root with its
// nvpmodel.conf, the fake nvpmodel (in MAXN) and the helper script as the
// agent's power command. Its env is what the agent and the helper need.
type jetsonRig struct {
	sysroot, fakes, conf string
	helper               []string
	env                  []string
}

func newJetsonRig(t *testing.T, tweak func(*fakehw.NVPModel)) *jetsonRig {
	t.Helper()
	fake := buildOnce(t, "fakehw", "github.com/vlmfleet/vlmfleet/agent/devicefacts/fakehw/cmd/fakehw")
	data, err := os.ReadFile("power/testdata/nvpmodel_orin_nx.conf")
	if err != nil {
		t.Fatal(err)
	}
	conf, err := power.ParseConf("nvpmodel.conf", data)
	if err != nil {
		t.Fatal(err)
	}
	nvp := &fakehw.NVPModel{Mode: "MAXN", ID: 0, Modes: conf.Modes}
	if tweak != nil {
		tweak(nvp)
	}
	root, fakes := fakehw.Scenario(t, fake, "orin-nx", fakehw.Config{NVPModel: nvp})
	confPath := filepath.Join(root, "etc", "nvpmodel.conf")
	if err := os.WriteFile(confPath, data, 0o644); err != nil {
		t.Fatal(err)
	}
	script, err := filepath.Abs("../deploy/vlmfleet-power")
	if err != nil {
		t.Fatal(err)
	}
	return &jetsonRig{sysroot: root, fakes: fakes, conf: confPath, helper: []string{"/bin/sh", script},
		env: []string{"PATH=" + fakes + string(os.PathListSeparator) + os.Getenv("PATH"), "VLMFLEET_NVPMODEL_CONF=" + confPath}}
}

// setenv puts the rig's environment in this process, for the helper the
// in-process agent runs.
func (r *jetsonRig) setenv(t *testing.T) {
	for _, kv := range r.env {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
}

// switches are the fake nvpmodel's -m calls so far.
func (r *jetsonRig) switches(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(r.fakes, fakehw.NVPModelLog))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// simDeployment is a simulated engine of the Orin NX, fast.
func simDeployment(t *testing.T, speedup float64) agent.DeploymentConfig {
	t.Helper()
	deps, err := agent.SimulatedDeployments("Jetson Orin NX", speedup)
	if err != nil {
		t.Fatal(err)
	}
	d := deps[0]
	d.ID = "d1"
	return d
}

// smallWorkload is one combination of a few requests.
func smallWorkload(requests int) protocol.Workload {
	w := protocol.DefaultWorkload()
	w.Sizes, w.Cameras, w.RequestsPerLevel, w.WarmupRequests = []string{"720p"}, []int{1}, requests, 0
	w.MultiImageSizes, w.ImagesPerRequest, w.MultiImageRequests = nil, nil, 0
	w.FrameIntervalSec = nil
	return w
}

func joined(s []string) string { return fmt.Sprintf("%q", s) }

func testutilConnect(t *testing.T, url string) (*nats.Conn, jetstream.JetStream) {
	return testutil.ConnectJS(t, url)
}
