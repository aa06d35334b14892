package simlab_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/vlmfleet/vlmfleet/internal/simlab"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// An agent stopped mid-job hands the job back; started again, it measures
// the job as a new attempt and closes the interrupted attempt's run.
func TestAgentStoppedMidJobGetsItAgain(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	l := newLab(t, ctx, simlab.Options{})
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
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	l := newLab(t, ctx, simlab.Options{})
	l.startAgent(agx("rebind"))
	job := l.submit("rebind", tinyWorkload(1))
	l.waitState(job, protocol.JobCompleted, 1)

	nc, err := nats.Connect(l.Controller().NATSURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	if err := js.DeleteConsumer(ctx, protocol.StreamJobs, protocol.JobConsumerName("rebind")); err != nil {
		t.Fatal(err)
	}
	job = l.submit("rebind", tinyWorkload(1))
	l.waitState(job, protocol.JobCompleted, 1)
}
