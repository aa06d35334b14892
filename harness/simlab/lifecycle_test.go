package simlab_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/vlmfleet/vlmfleet/agent"
	"github.com/vlmfleet/vlmfleet/controller/client"

	"github.com/vlmfleet/vlmfleet/harness/simlab"
	"github.com/vlmfleet/vlmfleet/internal/testutil"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// An agent stopped mid-job hands the job back; started again, it measures
// the job as a new attempt and closes the interrupted attempt's run.
func TestAgentStoppedMidJobGetsItAgain(t *testing.T) {
	l := newLab(t, testContext(t, 60*time.Second), simlab.Options{})
	a := l.startAgent(agx("restart"))
	job := l.submit("restart", tinyWorkload(200))
	l.waitState(job, protocol.JobRunning, 1)
	if err := a.Stop(); err != nil {
		t.Fatal(err)
	}

	a = l.startAgent(agx("restart"))
	l.waitState(job, protocol.JobRunning, 2)
	if err := a.Stop(); err != nil { // no need to measure 200 requests twice: attempt 2 started
		t.Fatal(err)
	}
	first := fetchRun(t, l.url(), job+"-a1")
	if first.Status != protocol.RunFailed || !strings.Contains(first.Error, "delivered again as attempt 2") {
		t.Fatalf("interrupted run: status %s error %q", first.Status, first.Error)
	}
}

// An agent whose job consumer disappears binds it again and keeps taking jobs.
func TestAgentRebindsALostConsumer(t *testing.T) {
	l := newLab(t, testContext(t, 60*time.Second), simlab.Options{})
	l.startAgent(agx("rebind"))
	job := l.submit("rebind", tinyWorkload(1))
	l.waitState(job, protocol.JobCompleted, 1)

	// Only the controller (or an operator) may delete a consumer.
	_, js := testutil.ConnectJS(t, l.Controller().NATSURL(), testutil.NkeyFile(t, l.Controller().NATSSeedFile()))
	if err := js.DeleteConsumer(l.ctx, protocol.StreamJobs, protocol.JobConsumerName("rebind")); err != nil {
		t.Fatal(err)
	}
	job = l.submit("rebind", tinyWorkload(1))
	l.waitState(job, protocol.JobCompleted, 1)
}

// Revoking an agent's credentials closes its connection and refuses the
// reconnect: the agent stops with an error that says what to do. An agent
// without credentials is refused at once, with the same advice.
func TestRevokedAgentStops(t *testing.T) {
	l := newLab(t, testContext(t, 60*time.Second), simlab.Options{})
	a := l.startAgent(agx("revoked"))
	cl, err := client.New(l.url(), client.WithToken(l.Controller().APIToken()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cl.RevokeAgentCredentials(l.ctx, "revoked"); err != nil {
		t.Fatalf("revoke over HTTP: %v", err)
	}
	select {
	case <-a.Done():
	case <-l.ctx.Done():
		t.Fatal("the revoked agent still runs")
	}
	err = a.Stop()
	var refused *agent.RefusedError
	if !errors.As(err, &refused) || !errors.Is(err, nats.ErrAuthorization) {
		t.Fatalf("the revoked agent ended with %v, want a *agent.RefusedError", err)
	}
	testutil.WantError(t, err, "create new ones with `vlmfleet agent-creds create revoked`")

	d := agx("nocreds")
	d.NATSURL = l.Controller().NATSURL() // its own URL: simlab does not enrol it
	_, err = l.AddAgent(l.ctx, d)
	testutil.WantError(t, err, "the controller requires credentials: create them with `vlmfleet agent-creds create nocreds`")
}

// An agent that dies mid-job without handing it back (here its connection
// is cut by revoking its credentials, so no nak reaches the server) and
// starts again has not got the job until JetStream delivers it again. Until
// then the job is shown stalled, not plainly running; then it completes as
// attempt 2.
func TestAgentRestartedWithoutItsJobShowsItStalled(t *testing.T) {
	l := newLab(t, testContext(t, 90*time.Second), simlab.Options{JobAckWait: 8 * time.Second})
	a := l.startAgent(agx("killed"))
	job := l.submit("killed", tinyWorkload(60))
	l.waitState(job, protocol.JobRunning, 1)

	if err := l.Controller().RevokeAgent(l.ctx, "killed"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-a.Done():
	case <-l.ctx.Done():
		t.Fatal("the revoked agent still runs")
	}
	_ = a.Stop() // it ended refused, as expected

	l.startAgent(agx("killed")) // enrolled again; announced as a new start
	for {
		v, err := l.Controller().Job(l.ctx, job)
		if err != nil {
			t.Fatal(err)
		}
		if v.Stalled {
			if v.State != protocol.JobRunning || v.Attempt != 1 || !strings.Contains(v.StallReason, "restarted without it") {
				t.Fatalf("stalled job: state %s attempt %d reason %q", v.State, v.Attempt, v.StallReason)
			}
			break
		}
		select {
		case s := <-l.state:
			if s.JobID == job && s.Attempt > 1 {
				t.Fatalf("job delivered again (%s, attempt %d) before it was ever shown stalled", s.State, s.Attempt)
			}
		case <-time.After(50 * time.Millisecond):
		case <-l.ctx.Done():
			t.Fatal("the job was never shown stalled")
		}
	}

	l.waitState(job, protocol.JobAccepted, 2)
	if v, err := l.Controller().Job(l.ctx, job); err != nil || v.Stalled {
		t.Fatalf("after the redelivery: stalled %v (%q), err %v", v.Stalled, v.StallReason, err)
	}
	l.waitState(job, protocol.JobCompleted, 2)
}
