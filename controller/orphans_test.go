package controller

import (
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/controller/ingest"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// A queued job whose message an operator deletes from the jobs stream
// before its agent took it ends failed; one still in the stream, and one
// its agent reported on, are left as they are.
func TestQueuedJobGoneFromTheStreamFails(t *testing.T) {
	c := startControllerWith(t, Options{DataDir: t.TempDir(), OrphanCheckInterval: 50 * time.Millisecond})
	ev, a := announced(t, c, "idle", "d1", "d2", "d3") // announced, never consuming
	jobs := submitJobs(t, c, "idle")
	if len(jobs) != 3 {
		t.Fatalf("%d jobs, want 3", len(jobs))
	}
	gone, kept, reported := jobs[0], jobs[1], jobs[2]
	// The agent reported on one job (it took it): never touched, even gone.
	a.state(t, reported, protocol.JobAccepted, 1, true)
	ev.waitFor(t, 1, stateIs(reported, protocol.JobAccepted))

	_, js := adminConn(t, c)
	stream, err := js.Stream(waitCtx(t), protocol.StreamJobs)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{gone, reported} {
		rec, err := c.store.Job(id)
		if err != nil || rec.StreamSeq == 0 {
			t.Fatalf("job %s: %+v %v", id, rec, err)
		}
		if err := stream.DeleteMsg(waitCtx(t), rec.StreamSeq); err != nil {
			t.Fatalf("operator deleting job %s: %v", id, err)
		}
	}

	e := ev.waitFor(t, 1, stateIs(gone, protocol.JobFailed))[0]
	if ch := e.Data.(protocol.JobStateChange); ch.Error != orphanReason || ch.AgentID != "idle" {
		t.Errorf("failed event %+v, want agent idle and error %q", ch, orphanReason)
	}
	var jv api.JobView
	if code := getJSON(t, c.HTTPURL()+"/api/jobs/"+gone, &jv); code != 200 {
		t.Fatalf("GET job: %d", code)
	}
	if jv.State != protocol.JobFailed || jv.Error != orphanReason {
		t.Errorf("job gone from the stream: state %s error %q, want failed, %q", jv.State, jv.Error, orphanReason)
	}
	// Ending it took two checks, each of which saw the other jobs too.
	for id, want := range map[string]protocol.JobState{kept: protocol.JobQueued, reported: protocol.JobAccepted} {
		rec, err := c.store.Job(id)
		if err != nil {
			t.Fatal(err)
		}
		if rec.State != want || rec.Error != "" {
			t.Errorf("job %s: state %s error %q, want %s", id, rec.State, rec.Error, want)
		}
	}
	if n := streamMsgs(t, c, protocol.StreamJobs); n != 1 {
		t.Errorf("jobs stream holds %d messages, want the kept job's 1", n)
	}
}

// A job its agent took and reported on, whose report still waits in the
// events stream when the job's message is gone (ingestion lagging behind a
// busy lab), is not failed: the agent's report is taken in first. Without
// the events-progress rule the two checks below fail it.
func TestQueuedJobWithItsReportStillToIngestIsNotFailed(t *testing.T) {
	c := startControllerWith(t, Options{DataDir: t.TempDir(), OrphanCheckInterval: time.Hour})
	ev, a := announced(t, c, "busy", "d1")
	jobs := submitJobs(t, c, "busy")
	if len(jobs) != 1 {
		t.Fatalf("%d jobs, want 1", len(jobs))
	}
	job := jobs[0]

	// Ingestion stops (as if far behind); the agent reports and then
	// acknowledges the job, which removes its message.
	var events *ingest.Binding
	for _, b := range c.consumers {
		if b.Stream() == protocol.StreamEvents {
			events = b
		}
	}
	if events == nil {
		t.Fatal("no events consumer")
	}
	if cc := events.Stop(); cc != nil {
		cc.Stop()
		<-cc.Closed()
	}
	// The unsubscription reaches the server before the agent's report, or
	// the server may still hand the report to the stopped consumption's
	// pull that was waiting (seen under load).
	if err := c.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	a.state(t, job, protocol.JobAccepted, 1, true)
	rec, err := c.store.Job(job)
	if err != nil {
		t.Fatal(err)
	}
	_, js := adminConn(t, c)
	stream, err := js.Stream(waitCtx(t), protocol.StreamJobs)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.DeleteMsg(waitCtx(t), rec.StreamSeq); err != nil {
		t.Fatal(err)
	}

	w := &orphanWatch{missing: map[string]uint64{}, eventsAt: map[string]uint64{}}
	for i := range 3 {
		if err := c.checkOrphans(waitCtx(t), w); err != nil {
			t.Fatalf("check %d: %v", i+1, err)
		}
	}
	if rec, err := c.store.Job(job); err != nil || rec.State != protocol.JobQueued {
		t.Fatalf("after three checks with the report still to ingest: %s %v, want queued", rec.State, err)
	}

	// Ingestion resumes: the agent's report moves the job on, and the
	// watch has nothing to fail.
	if err := events.Resume(waitCtx(t)); err != nil {
		t.Fatal(err)
	}
	ev.waitFor(t, 1, stateIs(job, protocol.JobAccepted))
	if err := c.checkOrphans(waitCtx(t), w); err != nil {
		t.Fatal(err)
	}
	if rec, err := c.store.Job(job); err != nil || rec.State != protocol.JobAccepted {
		t.Fatalf("after ingestion resumed: %s %v, want accepted", rec.State, err)
	}
}

// The events consumer covers a sequence once it has acknowledged it, or
// everything the stream holds: a stream recreated since numbers afresh, and
// what its predecessor held is gone. A report the stream holds and the
// consumer has not acknowledged is never covered, whatever the consumer's
// pending counts say (the server counts it pending only after
// acknowledging its publish).
func TestEventsProgressCovers(t *testing.T) {
	for _, tc := range []struct {
		p    eventsProgress
		seq  uint64
		want bool
	}{
		{eventsProgress{ackFloor: 1, streamLast: 2}, 2, false}, // the report still to ingest
		{eventsProgress{ackFloor: 2, streamLast: 2}, 2, true},
		{eventsProgress{ackFloor: 5, streamLast: 9}, 4, true},
		{eventsProgress{ackFloor: 3, streamLast: 3}, 500, true}, // stream recreated, all ingested
		{eventsProgress{ackFloor: 2, streamLast: 3}, 500, false},
		{eventsProgress{}, 500, true}, // stream recreated, empty
	} {
		if got := tc.p.covers(tc.seq); got != tc.want {
			t.Errorf("%+v covers %d: %v, want %v", tc.p, tc.seq, got, tc.want)
		}
	}
}
