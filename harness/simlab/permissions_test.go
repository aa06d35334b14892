package simlab_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/vlmfleet/vlmfleet/controller"
	"github.com/vlmfleet/vlmfleet/harness/simlab"
	"github.com/vlmfleet/vlmfleet/internal/jobconsumer"
	"github.com/vlmfleet/vlmfleet/internal/testutil"
	"github.com/vlmfleet/vlmfleet/internal/testutil/natstest"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// TestPerAgentPermissions runs a real controller and a real agent against a
// NATS server that confines each agent account to
// protocol.AgentPermissionSubjects, shows that a job completes through those
// permissions alone, and then shows, as agent-a, that every way of reaching
// agent-b's subjects and consumer is refused while agent-a's own still work.
func TestPerAgentPermissions(t *testing.T) {
	url := startPermissionedNATS(t, "agent-a", "agent-b")
	l := newLab(t, testContext(t, 60*time.Second), simlab.Options{NATSURL: url("controller")})
	d := agx("agent-a")
	d.NATSURL = url("agent-a")
	a := l.startAgent(d) // it announced itself through its permissioned account
	defer func() {
		if err := a.Stop(); err != nil {
			t.Errorf("agent: %v", err)
		}
	}()

	w := protocol.DefaultWorkload()
	w.Sizes = []string{"720p"}
	w.Cameras = []int{1}
	w.RequestsPerLevel = 1
	w.MultiImageSizes = nil
	w.ImagesPerRequest = []int{1}
	job := l.submit("agent-a", w)
	final := l.waitState(job, protocol.JobCompleted, 1)
	run := fetchRun(t, l.url(), final.RunID)
	if run.Status != protocol.RunCompleted || len(run.Combinations) != len(w.Plan()) {
		t.Fatalf("stored run: status %s, %d combinations, want completed with %d", run.Status, len(run.Combinations), len(w.Plan()))
	}

	checkConfinement(l.ctx, t, func(user string, opts ...nats.Option) (*nats.Conn, jetstream.JetStream) {
		return testutil.ConnectJS(t, url(user), opts...)
	})
}

// TestDefaultControllerConfinesAgents is TestPerAgentPermissions against
// the default controller, its embedded server and nothing else configured:
// no client gets in without credentials, and an enrolled agent's
// credentials carry exactly its own subjects.
func TestDefaultControllerConfinesAgents(t *testing.T) {
	l := newLab(t, testContext(t, 60*time.Second), simlab.Options{})
	ctrl := l.Controller()
	if _, err := nats.Connect(ctrl.NATSURL()); !errors.Is(err, nats.ErrAuthorization) {
		t.Fatalf("an unauthenticated client connecting: %v, want an authorization violation", err)
	}
	seed, err := ctrl.EnrolAgent(l.ctx, "agent-a")
	if err != nil {
		t.Fatal(err)
	}
	d := agx("agent-a")
	d.NATSSeed = seed // the same credentials for the agent and the checks beside it
	a := l.startAgent(d)
	defer func() {
		if err := a.Stop(); err != nil {
			t.Errorf("agent: %v", err)
		}
	}()
	w := protocol.DefaultWorkload()
	w.Sizes, w.Cameras, w.RequestsPerLevel = []string{"720p"}, []int{1}, 1
	w.MultiImageSizes, w.ImagesPerRequest = nil, []int{1}
	final := l.waitState(l.submit("agent-a", w), protocol.JobCompleted, 1)
	if run := fetchRun(t, l.url(), final.RunID); run.Status != protocol.RunCompleted || len(run.Combinations) != len(w.Plan()) {
		t.Fatalf("stored run: status %s, %d combinations, want completed with %d", run.Status, len(run.Combinations), len(w.Plan()))
	}

	checkConfinement(l.ctx, t, func(user string, opts ...nats.Option) (*nats.Conn, jetstream.JetStream) {
		switch user {
		case "controller":
			opts = append(opts, testutil.NkeyFile(t, ctrl.NATSSeedFile()))
		case "agent-a":
			opts = append(opts, testutil.NkeySeed(t, seed))
		default:
			t.Fatalf("no credentials for %s", user)
		}
		return testutil.ConnectJS(t, ctrl.NATSURL(), opts...)
	})
}

// checkConfinement connects as agent-a beside the running agent and tries
// agent-b's subjects and consumer one way after another; dial connects as
// a user ("controller" or "agent-a").
func checkConfinement(ctx context.Context, t *testing.T, dial func(user string, opts ...nats.Option) (*nats.Conn, jetstream.JetStream)) {
	admin, adminJS := dial("controller")
	v := newViolations()
	nc, js := dial("agent-a", nats.ErrorHandler(v.handle), nats.CustomInboxPrefix(protocol.AgentInboxPrefix("agent-a")))

	const (
		other    = "agent-b"
		otherCon = "agent-" + other
	)
	jobsAPI := "$JS.API.CONSUMER.%s." + protocol.StreamJobs + "." + otherCon

	// Rewriting its own consumer to filter on another agent's jobs would let
	// an agent take (and, on a work queue, remove) that agent's jobs. This is
	// tried first, while agent-b has no consumer of its own: once it has,
	// the work queue refuses overlapping filters anyway and would hide a
	// permission that is too wide.
	v.refused(ctx, t, "$JS.API.CONSUMER.CREATE."+protocol.StreamJobs+"."+protocol.JobConsumerName("agent-a")+"."+protocol.JobSubject(other),
		func(ctx context.Context) error {
			_, err := js.CreateOrUpdateConsumer(ctx, protocol.StreamJobs, jetstream.ConsumerConfig{
				Durable: protocol.JobConsumerName("agent-a"), FilterSubject: protocol.JobSubject(other),
				AckPolicy: jetstream.AckExplicitPolicy, MaxAckPending: 1,
			})
			return err
		})
	// Nor may it create or change its own consumer, with its own filter:
	// a consumer's configuration names where it delivers (here another
	// agent's results), and the server checks that against no permission.
	// The controller made agent-a's consumer.
	ownCreate := "$JS.API.CONSUMER.CREATE." + protocol.StreamJobs + "." + protocol.JobConsumerName("agent-a") + "." + protocol.JobSubject("agent-a")
	v.refused(ctx, t, ownCreate, func(ctx context.Context) error {
		_, err := js.CreateOrUpdatePushConsumer(ctx, protocol.StreamJobs, jetstream.ConsumerConfig{
			Durable: protocol.JobConsumerName("agent-a"), FilterSubject: protocol.JobSubject("agent-a"),
			AckPolicy: jetstream.AckExplicitPolicy, DeliverSubject: protocol.AgentSubject(other, protocol.KindResult),
		})
		return err
	})
	v.refused(ctx, t, fmt.Sprintf(jobsAPI, "CREATE")+"."+protocol.JobSubject(other), func(ctx context.Context) error {
		_, err := js.CreateOrUpdateConsumer(ctx, protocol.StreamJobs, jetstream.ConsumerConfig{
			Durable: otherCon, FilterSubject: protocol.JobSubject(other), AckPolicy: jetstream.AckExplicitPolicy,
		})
		return err
	})

	// Forging a job, for agent-b or for itself (only the controller makes
	// jobs), or an announcement, a state or a result in agent-b's name.
	for _, subj := range []string{protocol.JobSubject(other), protocol.JobSubject("agent-a"),
		protocol.AgentSubject(other, protocol.KindHello), protocol.AgentSubject(other, protocol.KindState),
		protocol.AgentSubject(other, protocol.KindResult)} {
		v.refused(ctx, t, subj, func(ctx context.Context) error {
			_, err := js.Publish(ctx, subj, []byte(`{}`))
			return err
		})
	}
	if err := nc.Publish(protocol.AgentSubject(other, protocol.KindHeartbeat), []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	v.wait(ctx, t, "publish", protocol.AgentSubject(other, protocol.KindHeartbeat))

	// With agent-b's consumer in place (the real agent-b would create it),
	// agent-a can neither look it up nor pull from it.
	if _, err := adminJS.CreateOrUpdateConsumer(ctx, protocol.StreamJobs, jetstream.ConsumerConfig{
		Durable: otherCon, FilterSubject: protocol.JobSubject(other), AckPolicy: jetstream.AckExplicitPolicy,
	}); err != nil {
		t.Fatalf("controller creating agent-b's consumer: %v", err)
	}
	v.refused(ctx, t, fmt.Sprintf(jobsAPI, "INFO"), func(ctx context.Context) error {
		_, err := js.Consumer(ctx, protocol.StreamJobs, otherCon)
		return err
	})
	v.refused(ctx, t, fmt.Sprintf(jobsAPI, "MSG.NEXT"), func(ctx context.Context) error {
		_, err := nc.RequestWithContext(ctx, fmt.Sprintf(jobsAPI, "MSG.NEXT"), []byte(`{"batch":1,"no_wait":true}`))
		return err
	})

	// Deleting agent-b's consumer, or the controller's (ingestion would
	// stop), or a stream, or emptying one.
	for _, del := range []struct{ subject, stream, consumer string }{
		{fmt.Sprintf(jobsAPI, "DELETE"), protocol.StreamJobs, otherCon},
		{"$JS.API.CONSUMER.DELETE." + protocol.StreamEvents + "." + controller.ConsumerName, protocol.StreamEvents, controller.ConsumerName},
		{"$JS.API.CONSUMER.DELETE." + protocol.StreamJobs + "." + protocol.JobConsumerName("agent-a"), protocol.StreamJobs, protocol.JobConsumerName("agent-a")},
	} {
		v.refused(ctx, t, del.subject, func(ctx context.Context) error { return js.DeleteConsumer(ctx, del.stream, del.consumer) })
		if _, err := adminJS.Consumer(ctx, del.stream, del.consumer); err != nil {
			t.Fatalf("consumer %s on %s after agent-a tried to delete it: %v", del.consumer, del.stream, err)
		}
	}
	for _, op := range []string{"DELETE", "PURGE"} {
		subj := "$JS.API.STREAM." + op + "." + protocol.StreamEvents
		v.refused(ctx, t, subj, func(ctx context.Context) error {
			_, err := nc.RequestWithContext(ctx, subj, nil)
			return err
		})
	}

	// Listening in on agent-b's jobs or events, or on replies meant for
	// other clients (jobs a fetch delivers, the controller's events), or
	// on the controller's commands to agent-b (it could see its cancels).
	for _, subj := range []string{protocol.JobSubject(other), protocol.AgentSubject(other, ">"), protocol.JobSubjectAll,
		"_INBOX.>", protocol.AgentInboxPrefix(other) + ".>", protocol.ControlSubject(other), "vlmfleet.control.>"} {
		if _, err := nc.Subscribe(subj, func(*nats.Msg) {}); err != nil {
			t.Fatal(err)
		}
		v.wait(ctx, t, "subscription", subj)
	}

	// Nothing agent-a tried reached agent-b's streams.
	for stream, filter := range map[string]string{
		protocol.StreamJobs:   protocol.JobSubject(other),
		protocol.StreamEvents: protocol.AgentSubject(other, ">"),
	} {
		s, err := adminJS.Stream(ctx, stream)
		if err != nil {
			t.Fatal(err)
		}
		info, err := s.Info(ctx, jetstream.WithSubjectFilter(filter))
		if err != nil {
			t.Fatal(err)
		}
		if len(info.State.Subjects) != 0 {
			t.Errorf("stream %s holds messages agent-a sent as %s: %v", stream, other, info.State.Subjects)
		}
	}

	// Its own subjects work on the same connection: the refusals above are
	// the permissions, not a broken connection.
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	probe := protocol.AgentSubject("agent-a", "probe")
	got, err := admin.SubscribeSync(probe)
	if err != nil {
		t.Fatal(err)
	}
	if err := admin.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := nc.Publish(probe, []byte("own")); err != nil {
		t.Fatal(err)
	}
	if m, err := got.NextMsg(5 * time.Second); err != nil || string(m.Data) != "own" {
		t.Fatalf("agent-a publishing on its own subject %s: %v", probe, err)
	}
	ctl, err := nc.SubscribeSync(protocol.ControlSubject("agent-a"))
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := admin.Publish(protocol.ControlSubject("agent-a"), []byte("cancel")); err != nil {
		t.Fatal(err)
	}
	if m, err := ctl.NextMsg(5 * time.Second); err != nil || string(m.Data) != "cancel" {
		t.Fatalf("agent-a receiving on its own control subject %s: %v", protocol.ControlSubject("agent-a"), err)
	}
	own, err := js.Consumer(ctx, protocol.StreamJobs, protocol.JobConsumerName("agent-a"))
	if err != nil {
		t.Fatalf("agent-a looking up its own consumer: %v", err)
	}
	if f := own.CachedInfo().Config.FilterSubject; f != protocol.JobSubject("agent-a") {
		t.Fatalf("agent-a's consumer filters on %q, want %q", f, protocol.JobSubject("agent-a"))
	}
	if _, err := nc.RequestWithContext(ctx, "$JS.API.CONSUMER.MSG.NEXT."+protocol.StreamJobs+"."+protocol.JobConsumerName("agent-a"),
		[]byte(`{"batch":1,"no_wait":true}`)); err != nil {
		t.Fatalf("agent-a pulling from its own consumer: %v", err)
	}
	if err := v.unexpected(); err != nil {
		t.Fatalf("a permitted operation was refused: %v", err)
	}
}

// startPermissionedNATS starts a JetStream server in which "controller" may
// do anything and each agent only what protocol.AgentPermissionSubjects
// grants it. url(user) is that user's client URL; every password is "pw".
func startPermissionedNATS(t *testing.T, agents ...string) (url func(user string) string) {
	t.Helper()
	users := []*server.User{{Username: "controller", Password: "pw"}}
	for _, id := range agents {
		pub, sub := protocol.AgentPermissionSubjects(id)
		users = append(users, &server.User{Username: id, Password: "pw", Permissions: &server.Permissions{
			Publish:   &server.SubjectPermission{Allow: pub},
			Subscribe: &server.SubjectPermission{Allow: sub},
		}})
	}
	ns := natstest.Start(t, &server.Options{
		JetStream: true, StoreDir: t.TempDir(),
		MaxPayload: protocol.MaxMessageBytes,
		Users:      users,
		NoLog:      true,
	})
	addr := ns.Addr().String()
	return func(user string) string { return "nats://" + user + ":pw@" + addr }
}

// violations collects the permission errors the server reports
// asynchronously on one connection.
type violations struct{ ch chan error }

func newViolations() *violations { return &violations{ch: make(chan error, 64)} }

func (v *violations) handle(_ *nats.Conn, _ *nats.Subscription, err error) {
	select {
	case v.ch <- err:
	default:
	}
}

// wait returns once the server refused op ("publish" or "subscription") on
// subject; it fails the test if that does not happen within 5 s.
func (v *violations) wait(ctx context.Context, t *testing.T, op, subject string) {
	t.Helper()
	want := fmt.Sprintf("%s to %q", op, subject)
	timeout := time.After(5 * time.Second)
	for {
		select {
		case err := <-v.ch:
			if errors.Is(err, nats.ErrPermissionViolation) && strings.Contains(strings.ToLower(err.Error()), strings.ToLower(want)) {
				return
			}
			t.Errorf("unexpected error while waiting for a refused %s: %v", want, err)
		case <-timeout:
			t.Fatalf("agent-a was not refused %s", want)
		case <-ctx.Done():
			t.Fatalf("agent-a was not refused %s: %v", want, ctx.Err())
		}
	}
}

// refused runs call (a request or JetStream publish on subject), waits until
// the server refuses the publish, then ends the call, which must report an
// error: a refused request is otherwise only answered by its timeout.
func (v *violations) refused(ctx context.Context, t *testing.T, subject string, call func(context.Context) error) {
	t.Helper()
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- call(cctx) }()
	v.wait(ctx, t, "publish", subject)
	cancel()
	if err := <-done; err == nil {
		t.Fatalf("%s: the call succeeded although the server refused it", subject)
	}
}

// unexpected reports an error the server sent that no check asked for.
func (v *violations) unexpected() error {
	select {
	case err := <-v.ch:
		return err
	default:
		return nil
	}
}

// TestExampleNATSConfig keeps deploy/nats-server.conf honest: every agent
// user there is granted exactly protocol.AgentPermissionSubjects of its
// name, the controller everything, and a server started from the file
// (on a free loopback port and a temp store) carries an agent's JetStream
// traffic, up to the largest message the protocol allows.
func TestExampleNATSConfig(t *testing.T) {
	const path = "../../deploy/nats-server.conf"
	opts, err := server.ProcessConfigFile(path)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if opts.MaxPayload != protocol.MaxMessageBytes {
		t.Errorf("%s: max_payload %d, want %d (protocol.MaxMessageBytes)", path, opts.MaxPayload, protocol.MaxMessageBytes)
	}
	if !opts.JetStream {
		t.Errorf("%s: jetstream is not enabled", path)
	}
	passwords := map[string]string{}
	var agents []string
	for _, u := range opts.Users {
		passwords[u.Username] = u.Password
		if u.Account == nil || u.Account.Name != "VLMFLEET" {
			t.Errorf("%s: user %s is not in account VLMFLEET", path, u.Username)
		}
		if u.Username == "controller" {
			if u.Permissions != nil {
				t.Errorf("%s: the controller is restricted (%+v); it must be able to do everything in its account", path, u.Permissions)
			}
			continue
		}
		agents = append(agents, u.Username)
		if err := protocol.ValidateAgentID(u.Username); err != nil {
			t.Errorf("%s: user %s: %v", path, u.Username, err)
		}
		pub, sub := protocol.AgentPermissionSubjects(u.Username)
		p := u.Permissions
		if p == nil || p.Publish == nil || p.Subscribe == nil {
			t.Errorf("%s: agent %s has no publish and subscribe permissions", path, u.Username)
			continue
		}
		if !sameSet(p.Publish.Allow, pub) || len(p.Publish.Deny) != 0 {
			t.Errorf("%s: agent %s publish allow %q deny %q, want allow %q", path, u.Username, p.Publish.Allow, p.Publish.Deny, pub)
		}
		if !sameSet(p.Subscribe.Allow, sub) || len(p.Subscribe.Deny) != 0 {
			t.Errorf("%s: agent %s subscribe allow %q deny %q, want allow %q", path, u.Username, p.Subscribe.Allow, p.Subscribe.Deny, sub)
		}
	}
	if passwords["controller"] == "" || len(agents) == 0 {
		t.Fatalf("%s: want a controller user and at least one agent user, have %d users", path, len(opts.Users))
	}

	opts.HTTPPort = 0
	opts.StoreDir = t.TempDir()
	opts.NoLog = true
	ns := natstest.Start(t, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	connect := func(user string) jetstream.JetStream {
		opts := []nats.Option{}
		if user != "controller" {
			opts = append(opts, nats.CustomInboxPrefix(protocol.AgentInboxPrefix(user)))
		}
		_, js := testutil.ConnectJS(t, "nats://"+user+":"+passwords[user]+"@"+ns.Addr().String(), opts...)
		return js
	}
	admin := connect("controller")
	for _, cfg := range []jetstream.StreamConfig{controller.JobsStreamConfig(), controller.EventsStreamConfig()} {
		if _, err := admin.CreateOrUpdateStream(ctx, cfg); err != nil {
			t.Fatalf("controller creating stream %s: %v", cfg.Name, err)
		}
	}
	id := agents[0]
	js := connect(id)
	big := make([]byte, protocol.MaxMessageBytes-64<<10) // headroom for headers
	if _, err := js.Publish(ctx, protocol.AgentSubject(id, protocol.KindResult), big, jetstream.WithMsgID("big")); err != nil {
		t.Fatalf("agent %s publishing a %d-byte result: %v", id, len(big), err)
	}
	// The controller makes the agent's consumer; the agent binds it.
	if _, err := admin.CreateOrUpdateConsumer(ctx, protocol.StreamJobs, jobconsumer.Config(id, 30*time.Second)); err != nil {
		t.Fatalf("controller creating agent %s's job consumer: %v", id, err)
	}
	cons, err := js.Consumer(ctx, protocol.StreamJobs, protocol.JobConsumerName(id))
	if err != nil {
		t.Fatalf("agent %s binding its job consumer: %v", id, err)
	}
	if _, err := admin.Publish(ctx, protocol.JobSubject(id), []byte("job")); err != nil {
		t.Fatal(err)
	}
	batch, err := cons.Fetch(1, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatalf("agent %s fetching: %v", id, err)
	}
	n := 0
	for m := range batch.Messages() {
		n++
		if err := m.DoubleAck(ctx); err != nil {
			t.Fatalf("agent %s acking its job: %v", id, err)
		}
	}
	if n != 1 || batch.Error() != nil {
		t.Fatalf("agent %s fetched %d jobs (%v), want 1", id, n, batch.Error())
	}
}

// sameSet says whether a and b hold the same subjects; the order of an
// allow list does not matter to the server.
func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
