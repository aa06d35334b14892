package simlab_test

import (
	"net/url"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/harness/simlab"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// A job delivered just as the agent's pull for it runs out is still
// measured at its first attempt. Issue 11 item 1: with 200 agent processes
// on two cores, the server read the agents' pulls late, so it still held a
// pull the agent had already given up on and delivered the job to its
// abandoned inbox; the job waited out the ack wait, ran as attempt 2, and
// the agent closed an attempt 1 it never saw as "the agent stopped during
// this attempt". Here a proxy holds back what the agent sends by 3 s and
// the job is published 3.5 s after the agent sent a pull: past the 3 s an
// agent pulling for 2 s waits, before the server, which read the pull 3 s
// late, lets it expire.
func TestJobDeliveredAsThePullExpiresRunsAtItsFirstAttempt(t *testing.T) {
	const lag = 3 * time.Second
	l := newLab(t, testContext(t, 90*time.Second), simlab.Options{JobAckWait: 10 * time.Second})
	ctl := l.Controller()
	u, err := url.Parse(ctl.NATSURL())
	if err != nil {
		t.Fatal(err)
	}
	id := "slowlink"
	link := newSlowLink(t, u.Host, "$JS.API.CONSUMER.MSG.NEXT."+protocol.StreamJobs+"."+protocol.JobConsumerName(id), lag)
	seed, err := ctl.EnrolAgent(l.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	d := agx(id)
	d.NATSURL, d.NATSSeed = "nats://"+link.addr(), seed
	l.startAgent(d)

	// The agent's first pull, and all it sends after it, reach the
	// server lag late.
	var pulled time.Time
	select {
	case pulled = <-link.seen:
	case <-l.ctx.Done():
		t.Fatal("the agent sent no pull for its jobs")
	}
	// The scenario is the delivery at this moment, not a wait for an event.
	time.Sleep(time.Until(pulled.Add(lag + 500*time.Millisecond)))
	job := l.submit(id, tinyWorkload(2))

	for {
		var s protocol.JobStateChange
		select {
		case s = <-l.state:
		case <-l.ctx.Done():
			t.Fatalf("job %s was never reported", job)
		}
		if s.JobID != job {
			continue
		}
		if s.Attempt != 1 {
			t.Fatalf("job %s first reported %s at attempt %d: its first delivery was lost", job, s.State, s.Attempt)
		}
		break
	}
	link.lift()
	l.waitState(job, protocol.JobCompleted, 1)
	v, err := ctl.Job(l.ctx, job)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range v.History {
		if h.Attempt != 1 {
			t.Errorf("job history has attempt %d (%s): %+v", h.Attempt, h.State, v.History)
		}
	}
	runs, err := ctl.RunSummaries(l.ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		if r.JobID == job && r.ID != job+"-a1" {
			t.Errorf("run %s (%s: %s) beside the job's one attempt", r.ID, r.Status, r.Error)
		}
	}
}
