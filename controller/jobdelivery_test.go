package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/vlmfleet/vlmfleet/internal/testutil"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// An agent cannot create or change a consumer (one with a deliver subject
// would push its jobs anywhere): the controller makes the agent's pull
// consumer when the agent first asks, replacing one that pushes, which an
// agent could create before.
func TestControllerMakesTheAgentsJobConsumer(t *testing.T) {
	c := startController(t, t.TempDir())
	ev := watchEvents(t, c)
	_, adminJS := adminConn(t, c)
	errs := make(chan error, 16)
	nc, js := testutil.ConnectJS(t, c.NATSURL(), append(agentAuth(t, c, "a1"),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { errs <- err }))...)
	a1 := &fakeAgent{id: "a1", nc: nc, js: js, ctl: c}
	ev.waitFor(t, 1, helloStored(a1.hello(t, "d1")))

	// A consumer on a1's own jobs that pushes them to another agent's
	// results, as an agent could once create: the controller replaces it.
	aimed := protocol.AgentSubject("t1", protocol.KindResult)
	if _, err := adminJS.CreateOrUpdatePushConsumer(waitCtx(t), protocol.StreamJobs, jetstream.ConsumerConfig{
		Durable: protocol.JobConsumerName("a1"), FilterSubject: protocol.JobSubject("a1"),
		AckPolicy: jetstream.AckExplicitPolicy, DeliverSubject: aimed,
	}); err != nil {
		t.Fatal(err)
	}
	hb := fmt.Appendf(nil, `{"schema":1,"agent_id":"a1","time":%q,"state":"idle","seq":1}`, time.Now().UTC().Format(time.RFC3339Nano))
	if _, err := a1.nc.Request(protocol.AgentSubject("a1", protocol.KindHeartbeat), hb, waitLimit); err != nil {
		t.Fatalf("a1's first heartbeat: %v", err)
	}
	cons, err := a1.js.Consumer(waitCtx(t), protocol.StreamJobs, protocol.JobConsumerName("a1"))
	if err != nil {
		t.Fatalf("a1 looking up its consumer after its first heartbeat was answered: %v", err)
	}
	if cfg := cons.CachedInfo().Config; cfg.DeliverSubject != "" || cfg.FilterSubject != protocol.JobSubject("a1") || cfg.MaxAckPending != 1 {
		t.Fatalf("a1's consumer delivers to %q, filters on %q, %d jobs at a time; want a pull consumer of a1's jobs, one at a time",
			cfg.DeliverSubject, cfg.FilterSubject, cfg.MaxAckPending)
	}

	// Creating (or changing) its consumer itself, here with a deliver
	// subject, is refused by the server.
	create := "$JS.API.CONSUMER.CREATE." + protocol.StreamJobs + "." + protocol.JobConsumerName("a1") + "." + protocol.JobSubject("a1")
	body := fmt.Appendf(nil, `{"stream_name":%q,"config":{"durable_name":%q,"filter_subject":%q,"ack_policy":"explicit","deliver_subject":%q}}`,
		protocol.StreamJobs, protocol.JobConsumerName("a1"), protocol.JobSubject("a1"), aimed)
	refusedRequest(t, nc, errs, create, body)
}

// A pull of an agent's own job whose reply subject is another agent's
// event subject has the job delivered there (the server does not check a
// pull's reply), but the events stream does not keep it: a job is
// published for the jobs stream only.
func TestEventsStreamRefusesASteeredJobDelivery(t *testing.T) {
	c := startController(t, t.TempDir())
	_, a1 := announced(t, c, "a1", "d1")
	admin, adminJS := adminConn(t, c)
	if _, err := adminJS.CreateOrUpdateConsumer(waitCtx(t), protocol.StreamJobs, jetstream.ConsumerConfig{
		Durable: protocol.JobConsumerName("a1"), FilterSubject: protocol.JobSubject("a1"),
		AckPolicy: jetstream.AckExplicitPolicy, MaxAckPending: 1,
	}); err != nil {
		t.Fatal(err)
	}
	sw := submit(t, c, protocol.Sweep{Agents: []string{"a1"}, Workload: testWorkload()})
	events, err := adminJS.Stream(waitCtx(t), protocol.StreamEvents)
	if err != nil {
		t.Fatal(err)
	}
	info, err := events.Info(waitCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	lastBefore := info.State.LastSeq
	steered := protocol.AgentSubject("a2", protocol.KindState)
	delivered, err := admin.SubscribeSync(steered)
	if err != nil {
		t.Fatal(err)
	}
	if err := admin.Flush(); err != nil {
		t.Fatal(err)
	}
	next := "$JS.API.CONSUMER.MSG.NEXT." + protocol.StreamJobs + "." + protocol.JobConsumerName("a1")
	if err := a1.nc.PublishRequest(next, steered, []byte(`{"batch":1,"expires":5000000000}`)); err != nil {
		t.Fatal(err)
	}
	m, err := delivered.NextMsg(waitLimit)
	if err != nil {
		t.Fatalf("the job a1 pulled with reply %s: %v", steered, err)
	}
	if !strings.Contains(string(m.Data), sw.Jobs[0]) {
		t.Fatalf("delivered to %s: %s, want a1's job %s", steered, m.Data, sw.Jobs[0])
	}
	// The stream takes what reaches its subjects in order: once a message
	// published after the delivery is stored, the delivery was decided on.
	ack, err := adminJS.Publish(waitCtx(t), protocol.AgentSubject("probe", protocol.KindState), []byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	if ack.Sequence != lastBefore+1 {
		t.Errorf("the events stream stored %d messages between the pull and the probe: a1's job steered to %s was kept",
			ack.Sequence-lastBefore-1, steered)
	}
}

// refusedRequest sends a request on subject that the server must refuse
// for the connection's permissions (errs receives its async errors).
func refusedRequest(t *testing.T, nc *nats.Conn, errs <-chan error, subject string, body []byte) {
	t.Helper()
	ctx, cancel := context.WithCancel(waitCtx(t))
	defer cancel()
	answered := make(chan *nats.Msg, 1)
	go func() {
		if m, err := nc.RequestWithContext(ctx, subject, body); err == nil {
			answered <- m
		}
	}()
	select {
	case err := <-errs:
		if !errors.Is(err, nats.ErrPermissionViolation) || !strings.Contains(err.Error(), subject) {
			t.Fatalf("%s: %v, want a permissions violation", subject, err)
		}
	case m := <-answered:
		t.Fatalf("%s was answered: %s", subject, m.Data)
	case <-ctx.Done():
		t.Fatalf("%s: neither refused nor answered", subject)
	}
}
