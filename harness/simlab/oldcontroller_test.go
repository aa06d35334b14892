package simlab_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/vlmfleet/vlmfleet/agent"
	"github.com/vlmfleet/vlmfleet/controller"
	"github.com/vlmfleet/vlmfleet/internal/testutil"
	"github.com/vlmfleet/vlmfleet/internal/testutil/natstest"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// An agent of this version still works with a controller from before,
// which left the job consumer to the agent and granted it the right to
// create it: answered without "job_consumer", the agent creates its pull
// consumer itself, as agents did then. The test plays that controller.
func TestAgentCreatesItsConsumerForAnOlderController(t *testing.T) {
	const id = "old-ctl"
	pub, sub := protocol.AgentPermissionSubjects(id)
	// What the older controller granted besides: creating the consumer.
	pub = append(pub, "$JS.API.CONSUMER.CREATE."+protocol.StreamJobs+"."+protocol.JobConsumerName(id)+"."+protocol.JobSubject(id))
	ns := natstest.Start(t, &server.Options{JetStream: true, StoreDir: t.TempDir(), NoLog: true, Users: []*server.User{
		{Username: "controller", Password: "pw"},
		{Username: id, Password: "pw", Permissions: &server.Permissions{
			Publish: &server.SubjectPermission{Allow: pub}, Subscribe: &server.SubjectPermission{Allow: sub}}},
	}})
	ctx := testContext(t, 60*time.Second)
	admin, js := testutil.ConnectJS(t, "nats://controller:pw@"+ns.Addr().String())
	for _, cfg := range []jetstream.StreamConfig{controller.JobsStreamConfig(), controller.EventsStreamConfig()} {
		if _, err := js.CreateOrUpdateStream(ctx, cfg); err != nil {
			t.Fatal(err)
		}
	}
	// The older controller's answer to the first heartbeat: the drain and
	// the encodings, nothing of the consumer.
	if _, err := admin.Subscribe(protocol.AgentSubject(id, protocol.KindHeartbeat), func(m *nats.Msg) {
		if m.Reply != "" {
			_ = m.Respond([]byte(`{"schema":1,"drained":false,"encodings":["s2"]}`))
		}
	}); err != nil {
		t.Fatal(err)
	}
	created, err := admin.SubscribeSync("$JS.EVENT.ADVISORY.CONSUMER.CREATED." + protocol.StreamJobs + "." + protocol.JobConsumerName(id))
	if err != nil {
		t.Fatal(err)
	}
	if err := admin.Flush(); err != nil {
		t.Fatal(err)
	}

	deps, err := agent.SimulatedDeployments("Jetson AGX Orin", 50, "Cosmos3-Edge")
	if err != nil {
		t.Fatal(err)
	}
	a, err := agent.New(agent.Config{ID: id, NATSURL: "nats://" + id + ":pw@" + ns.Addr().String(), Deployments: deps,
		Simulate: "Jetson AGX Orin", SimSpeedup: 50, LogDir: t.TempDir()},
		agent.Options{Log: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel), Version: "test", JobAckWait: 7 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- a.Run(runCtx) }()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("agent: %v", err)
		}
	}()

	if _, err := created.NextMsg(30 * time.Second); err != nil {
		t.Fatalf("the agent did not create its job consumer: %v", err)
	}
	cons, err := js.Consumer(ctx, protocol.StreamJobs, protocol.JobConsumerName(id))
	if err != nil {
		t.Fatal(err)
	}
	cfg := cons.CachedInfo().Config
	if cfg.FilterSubject != protocol.JobSubject(id) || cfg.DeliverSubject != "" || cfg.MaxAckPending != 1 ||
		cfg.MaxDeliver != protocol.MaxJobDeliveries || cfg.AckWait != 7*time.Second {
		t.Fatalf("the agent's consumer: %+v", cfg)
	}
}
