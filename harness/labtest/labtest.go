// Package labtest starts a real controller with one agent announced, whose
// part the test plays over JetStream, and builds small result documents:
// what the tests of the API client and of the CLI share. Only tests
// import it.
package labtest

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/vlmfleet/vlmfleet/controller"
	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/internal/testutil"
	"github.com/vlmfleet/vlmfleet/internal/tlsca"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// Agent is the agent Start announces; it offers one deployment, d1.
const Agent = "a1"

// Lab is a controller on loopback with Agent announced. Changes over HTTP
// need its API token: Ctl.APIToken(), or the file TokenFile.
type Lab struct {
	Ctx context.Context // ends with the test, or after 30 s
	Ctl *controller.Controller
	// TokenFile holds the API token changes over HTTP need.
	TokenFile string
	// NC and JS are the agent's connection: enrolled, it has exactly the
	// permissions a real agent has.
	NC *nats.Conn
	JS jetstream.JetStream
	// AdminJS is signed in as the controller, for what only the controller
	// (or an operator) may do: read a stream, delete a consumer.
	AdminJS jetstream.JetStream
}

// Start starts a controller with opt, its data (and API token) in a temp
// dir, NATS and HTTP on loopback and no log, and returns once Agent is
// stored. The
// controller and the connection close when the test ends.
func Start(t testing.TB, opt controller.Options) *Lab {
	t.Helper()
	opt.DataDir, opt.NATSListen, opt.HTTPAddr, opt.Log = t.TempDir(), "127.0.0.1:-1", "127.0.0.1:0", zerolog.Nop()
	ctl, err := controller.New(opt)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	if err := ctl.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ctl.Close() })
	var agentAuth, adminAuth []nats.Option
	if ctl.NATSAuth() == api.NATSAuthNkeys {
		seed, err := ctl.EnrolAgent(ctx, Agent)
		if err != nil {
			t.Fatal(err)
		}
		agentAuth = []nats.Option{testutil.NkeySeed(t, seed), nats.CustomInboxPrefix(protocol.AgentInboxPrefix(Agent))}
		adminAuth = []nats.Option{testutil.NkeyFile(t, ctl.NATSSeedFile())}
	}
	if strings.HasPrefix(ctl.NATSURL(), "tls://") { // opt.TLS on: pin the controller's CA
		cfg, err := tlsca.ClientConfig("", ctl.TLSFingerprint(), "127.0.0.1")
		if err != nil {
			t.Fatal(err)
		}
		agentAuth, adminAuth = append(agentAuth, nats.Secure(cfg)), append(adminAuth, nats.Secure(cfg))
	}
	nc, js := testutil.ConnectJS(t, ctl.NATSURL(), agentAuth...)
	_, adminJS := testutil.ConnectJS(t, ctl.NATSURL(), adminAuth...)
	announced := make(chan struct{}, 1)
	stop := ctl.OnEvent(func(e api.Event) {
		if e.Kind == api.EventAgent {
			select {
			case announced <- struct{}{}:
			default:
			}
		}
	})
	defer stop()
	hello, _ := json.Marshal(protocol.AgentHello{Schema: 1, AgentID: Agent, Hostname: "h", Simulated: true, Level: protocol.AgentLevel,
		Deployments: []protocol.Deployment{{ID: "d1", Engine: "sim", Model: "m"}}})
	if _, err := js.Publish(ctx, protocol.AgentSubject(Agent, protocol.KindHello), hello); err != nil {
		t.Fatal(err)
	}
	select {
	case <-announced:
	case <-ctx.Done():
		t.Fatal("the agent was never stored")
	}
	return &Lab{Ctx: ctx, Ctl: ctl, TokenFile: ctl.APITokenFile(), NC: nc, JS: js, AdminJS: adminJS}
}

// Report publishes the job's state, at attempt 1, as Agent does.
func (l *Lab) Report(t testing.TB, jobID, sweepID string, st protocol.JobState) {
	t.Helper()
	data, _ := json.Marshal(protocol.JobStateChange{Schema: 1, JobID: jobID, SweepID: sweepID, AgentID: Agent, State: st, Attempt: 1, Time: time.Now()})
	if _, err := l.JS.Publish(l.Ctx, protocol.AgentSubject(Agent, protocol.KindState), data, jetstream.WithMsgID(protocol.StateMsgID(jobID, st, 1))); err != nil {
		t.Fatal(err)
	}
}

// ResultDoc is a small valid result document: a completed bench run of
// model on a Jetson AGX Orin, two combinations measured.
func ResultDoc(id, model string) protocol.Run {
	w := protocol.DefaultWorkload()
	w.Sizes, w.Cameras, w.MultiImageSizes = []string{"720p"}, []int{1, 2}, nil
	at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	return protocol.Run{
		Schema: protocol.SchemaVersion, ID: id, Source: protocol.SourceBench, Status: protocol.RunCompleted,
		Config:    protocol.Configuration{Model: model, ParamsB: 4.4, Quantization: "Q8_0", Engine: "llama.cpp", Device: "Jetson AGX Orin"},
		Workload:  w,
		CreatedAt: at, FinishedAt: at.Add(time.Minute),
		Engine: protocol.EngineInfo{Kind: "llamacpp", Name: "llama.cpp"},
		Device: protocol.DeviceFacts{Name: "Jetson AGX Orin", Kind: protocol.DeviceJetson},
		Combinations: []protocol.Combination{
			{ComboKey: protocol.ComboKey{Size: "720p", Images: 1, Cameras: 1}, Completed: 8, TTFT: protocol.Stats{Mean: 1.31}, TPS: protocol.Stats{Mean: 28.4}},
			{ComboKey: protocol.ComboKey{Size: "720p", Images: 1, Cameras: 2}, Completed: 8, TTFT: protocol.Stats{Mean: 2.6}, TPS: protocol.Stats{Mean: 25}},
		},
	}
}
