package controller

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/controller/jobs"
	"github.com/vlmfleet/vlmfleet/internal/jobconsumer"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// submitJobs submits a sweep naming one agent and returns its job ids.
func submitJobs(t *testing.T, c *Controller, agentID string) []string {
	t.Helper()
	return submit(t, c, protocol.Sweep{Agents: []string{agentID}, Workload: testWorkload()}).Jobs
}

func stateIs(jobID string, st protocol.JobState) func(api.Event) bool {
	return func(e api.Event) bool {
		ch, ok := e.Data.(protocol.JobStateChange)
		return e.Kind == api.EventState && ok && ch.JobID == jobID && ch.State == st
	}
}

// jobConsumer is the agent's job consumer as the controller makes it
// (jobconsumer.Config), with a MaxDeliver of 2 so that the test crashes the
// agent only twice, bound by the agent.
func (a *fakeAgent) jobConsumer(t *testing.T) jetstream.Consumer {
	t.Helper()
	cfg := jobconsumer.Config(a.id, 30*time.Second)
	cfg.MaxDeliver = 2
	return a.boundJobConsumer(t, cfg)
}

// fetch takes the next job.
func fetch(t *testing.T, cons jetstream.Consumer) jetstream.Msg {
	t.Helper()
	batch, err := cons.Fetch(1, jetstream.FetchMaxWait(waitLimit))
	if err != nil {
		t.Fatal(err)
	}
	var got jetstream.Msg
	for m := range batch.Messages() {
		got = m
	}
	if got == nil {
		t.Fatalf("no job fetched: %v", batch.Error())
	}
	return got
}

func TestJobFailsWhenJetStreamGivesUpDelivering(t *testing.T) {
	c := startController(t, t.TempDir())
	ev, a := announced(t, c, "crashy", "d1")
	jobID := submitJobs(t, c, "crashy")[0]
	rec, err := c.store.Job(jobID)
	if err != nil || rec.StreamSeq == 0 {
		t.Fatalf("published job has no stream sequence: %+v %v", rec, err)
	}

	// The agent takes the job and stops mid-job, twice, handing it back.
	cons := a.jobConsumer(t)
	for attempt := 1; attempt <= 2; attempt++ {
		m := fetch(t, cons)
		if md, _ := m.Metadata(); md == nil || md.NumDelivered != uint64(attempt) {
			t.Fatalf("delivery %d: metadata %+v", attempt, md)
		}
		a.state(t, jobID, protocol.JobRunning, attempt, true)
		ev.waitFor(t, attempt, stateIs(jobID, protocol.JobRunning))
		if err := m.Nak(); err != nil {
			t.Fatal(err)
		}
	}
	// Coming back, it asks for work: JetStream gives up on the job instead.
	batch, err := cons.Fetch(1, jetstream.FetchMaxWait(300*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	for m := range batch.Messages() {
		t.Fatalf("job delivered a third time: %s", m.Data())
	}

	ev.waitFor(t, 1, stateIs(jobID, protocol.JobFailed))
	const reason = "delivered 2 times; the agent never finished it (it stopped or crashed each time)"
	var jv api.JobView
	if code := getJSON(t, c.HTTPURL()+"/api/jobs/"+jobID, &jv); code != 200 {
		t.Fatalf("GET job: %d", code)
	}
	if jv.State != protocol.JobFailed || jv.Error != reason || jv.Attempt != 2 || jv.Stalled {
		t.Errorf("job after the advisory: state %s attempt %d stalled %v error %q, want failed, 2, false, %q", jv.State, jv.Attempt, jv.Stalled, jv.Error, reason)
	}
	if n := len(jv.History); n != 3 || jv.History[2].State != protocol.JobFailed || jv.History[2].Error != reason {
		t.Errorf("history %+v, want running ×2 then failed with the reason", jv.History)
	}
	// The job is gone from the stream (deleted before the event), and the
	// advisory once handled.
	ctx := context.Background()
	stream, err := c.js.Stream(ctx, protocol.StreamJobs)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stream.GetMsg(ctx, rec.StreamSeq); !errors.Is(err, jetstream.ErrMsgNotFound) {
		t.Errorf("jobs stream still holds the failed job: %v", err)
	}
	eventually(t, "the advisory to be acknowledged", func() bool { return streamMsgs(t, c, AdvisoriesStream) == 0 })
}

func streamMsgs(t *testing.T, c *Controller, name string) uint64 {
	t.Helper()
	s, err := c.js.Stream(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Msgs
}

// publishAdvisory publishes, on nc, what nats-server publishes when a
// consumer gives up; an agent may not publish it.
func publishAdvisory(t *testing.T, nc *nats.Conn, consumer string, seq, deliveries uint64) {
	t.Helper()
	data, _ := json.Marshal(map[string]any{
		"type": jobs.MaxDeliverAdvisoryType, "id": "x", "timestamp": time.Now().UTC(),
		"stream": protocol.StreamJobs, "consumer": consumer, "stream_seq": seq, "deliveries": deliveries,
	})
	if err := nc.Publish("$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES."+protocol.StreamJobs+"."+consumer, data); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
}

// TestAdvisoryFindsJobsByStoredSequence covers the advisory for a job the
// stream no longer holds: found by the sequence stored at publishing,
// failed when unfinished, left alone when its agent finished it.
func TestAdvisoryFindsJobsByStoredSequence(t *testing.T) {
	c := startController(t, t.TempDir())
	ev, a := announced(t, c, "a1", "d1", "d2")
	jobs := submitJobs(t, c, "a1")
	if len(jobs) != 2 {
		t.Fatalf("%d jobs, want 2", len(jobs))
	}
	done, lost := jobs[0], jobs[1]
	// Both jobs leave the work-queue stream: acknowledged by the agent.
	cons := a.jobConsumer(t)
	for range jobs {
		if err := fetch(t, cons).DoubleAck(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	a.state(t, done, protocol.JobCompleted, 1, true)
	ev.waitFor(t, 1, stateIs(done, protocol.JobCompleted))
	a.state(t, lost, protocol.JobRunning, 1, true)
	ev.waitFor(t, 1, stateIs(lost, protocol.JobRunning))

	seq := func(id string) uint64 {
		r, err := c.store.Job(id)
		if err != nil {
			t.Fatal(err)
		}
		return r.StreamSeq
	}
	admin, _ := adminConn(t, c)
	publishAdvisory(t, admin, protocol.JobConsumerName("a1"), seq(done), 5)
	publishAdvisory(t, admin, protocol.JobConsumerName("a1"), seq(lost), 5)
	// A forged advisory naming a consumer that is no agent's is recorded.
	publishAdvisory(t, admin, "controller", seq(lost), 5)
	ev.waitFor(t, 1, stateIs(lost, protocol.JobFailed))
	eventually(t, "every advisory handled", func() bool { return streamMsgs(t, c, AdvisoriesStream) == 0 })

	if r, _ := c.store.Job(done); r.State != protocol.JobCompleted || r.Error != "" {
		t.Errorf("finished job moved by the advisory: %s %q", r.State, r.Error)
	}
	if r, _ := c.store.Job(lost); r.State != protocol.JobFailed || r.Attempt != 5 || !strings.Contains(r.Error, "delivered 5 times") {
		t.Errorf("lost job: %s attempt %d %q", r.State, r.Attempt, r.Error)
	}
	if n := len(ev.waitFor(t, 0, stateIs(done, protocol.JobFailed))); n != 0 {
		t.Errorf("%d failed events for the finished job", n)
	}
	rej, err := c.store.Rejected(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(rej) != 1 || !strings.Contains(rej[0].Reason, `consumer "controller" is not an agent's job consumer`) {
		t.Errorf("rejections %+v, want the forged advisory's", rej)
	}
}

func (a *fakeAgent) heartbeat(t *testing.T, jobID string) {
	t.Helper()
	hb, _ := json.Marshal(protocol.Heartbeat{Schema: 1, AgentID: a.id, Time: time.Now(), State: protocol.AgentBusy, JobID: jobID, Seq: 1})
	if err := a.nc.Publish(protocol.AgentSubject(a.id, protocol.KindHeartbeat), hb); err != nil {
		t.Fatal(err)
	}
	if err := a.nc.Flush(); err != nil {
		t.Fatal(err)
	}
}

func TestJobStalledWhileItsAgentIsOffline(t *testing.T) {
	c := startControllerWith(t, Options{DataDir: t.TempDir(), HeartbeatTimeout: 1500 * time.Millisecond})
	ev, a := announced(t, c, "a1", "d1", "d2")
	jobs := submitJobs(t, c, "a1")
	running, queued := jobs[0], jobs[1]
	a.state(t, running, protocol.JobRunning, 1, true)
	ev.waitFor(t, 1, stateIs(running, protocol.JobRunning))
	job := func(id string) api.JobView {
		t.Helper()
		var jv api.JobView
		if code := getJSON(t, c.HTTPURL()+"/api/jobs/"+id, &jv); code != 200 {
			t.Fatalf("GET job %s: %d", id, code)
		}
		return jv
	}
	if jv := job(running); jv.Stalled || !jv.StalledSince.IsZero() {
		t.Errorf("job of an online agent stalled: %+v", jv)
	}

	// The agent falls silent: its running job is stalled, not failed; the
	// queued one simply waits.
	ev.waitFor(t, 1, func(e api.Event) bool {
		v, ok := e.Data.(api.AgentView)
		return e.Kind == api.EventAgent && ok && v.ID == "a1" && !v.Online
	})
	jv := job(running)
	if !jv.Stalled || jv.State != protocol.JobRunning || jv.StalledSince.Before(jv.UpdatedAt) {
		t.Errorf("running job of an offline agent: stalled %v since %s (updated %s), state %s", jv.Stalled, jv.StalledSince, jv.UpdatedAt, jv.State)
	}
	if jv := job(queued); jv.Stalled {
		t.Errorf("queued job counted stalled")
	}
	var list []api.JobView
	getJSON(t, c.HTTPURL()+"/api/jobs?active=1", &list)
	if len(list) != 2 || !list[0].Stalled || list[1].Stalled {
		t.Errorf("GET /api/jobs: %+v", list)
	}
	var sv api.SweepView
	getJSON(t, c.HTTPURL()+"/api/sweeps/"+jv.SweepID, &sv)
	if sv.Status.Stalled != 1 || len(sv.JobList) != 2 || !sv.JobList[0].Stalled {
		t.Errorf("sweep status %+v, job states %+v", sv.Status, sv.JobList)
	}
	var snap api.LiveSnapshot
	getJSON(t, c.HTTPURL()+"/api/live", &snap)
	if len(snap.Jobs) != 2 || !snap.Jobs[0].Stalled {
		t.Errorf("live snapshot jobs %+v", snap.Jobs)
	}

	// Back again: no longer stalled.
	a.heartbeat(t, running)
	ev.waitFor(t, 1, kindIs(api.EventHeartbeat))
	st, err := c.SweepStatus(context.Background(), jv.SweepID)
	if err != nil || st.Stalled != 0 {
		t.Errorf("sweep status after the agent returned: %+v %v", st, err)
	}
	if jv := job(running); jv.Stalled {
		t.Errorf("job still stalled after its agent returned")
	}
}
