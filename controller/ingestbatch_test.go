package controller

import (
	"context"
	"encoding/json"
	"github.com/vlmfleet/vlmfleet/controller/api"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/vlmfleet/vlmfleet/controller/store"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// Results that wait together are stored in one transaction and acked
// after it; one refused among them is refused alone while the others are
// stored in the same transaction; a batch delivered again is stored once.
func TestIngestBatchStoresTogetherRefusesAlone(t *testing.T) {
	c := startController(t, t.TempDir())
	ev, a := announced(t, c, "a1", "d1")
	sw := submit(t, c, protocol.Sweep{Agents: []string{"a1"}, Workload: testWorkload()})
	job := sw.Jobs[0]
	a.state(t, job, protocol.JobRunning, 1, true)
	ev.waitFor(t, 1, kindIs(api.EventState))
	run := testRun(store.RunIDFor(job, 1), "a1")
	run.JobID, run.SweepID = job, sw.ID
	ghost := testRun(store.RunIDFor("ghost", 1), "a1")
	ghost.JobID = "ghost"
	msg := func(r protocol.Run, c *protocol.Combination, delivered uint64) *recordingMsg {
		data, err := json.Marshal(protocol.ResultMessage{Schema: 1, AgentID: "a1", Run: r, Combination: c})
		if err != nil {
			t.Fatal(err)
		}
		return &recordingMsg{subject: protocol.AgentSubject("a1", protocol.KindResult), data: data, delivered: delivered}
	}
	settled := func(ms ...*recordingMsg) string {
		var out []string
		for _, m := range ms {
			out = append(out, strings.Join(m.settled, "+"))
		}
		return strings.Join(out, " | ")
	}
	combos := func() int {
		r, err := c.store.RunSummary(context.Background(), run.ID)
		if err != nil {
			t.Fatal(err)
		}
		return len(r.Combinations)
	}

	gen := c.store.RunsGeneration()
	b1 := []*recordingMsg{msg(run, testCombo("480p", 1), 1), msg(run, testCombo("480p", 2), 1), msg(run, testCombo("720p", 1), 1)}
	c.ingester.Handle(b1[0], b1[1], b1[2])
	if got := settled(b1...); got != "ack | ack | ack" {
		t.Errorf("a batch of three results settled %s", got)
	}
	if n := c.store.RunsGeneration() - gen; n != 1 {
		t.Errorf("three results waiting together took %d transactions, want 1", n)
	}
	if n := combos(); n != 3 {
		t.Errorf("%d combinations stored, want 3", n)
	}

	gen = c.store.RunsGeneration()
	b2 := []*recordingMsg{msg(run, testCombo("720p", 2), 1), msg(ghost, testCombo("480p", 1), 1), msg(run, testCombo("480p", 1), 2)}
	c.ingester.Handle(b2[0], b2[1], b2[2])
	if n := c.store.RunsGeneration() - gen; n != 1 {
		t.Errorf("a batch with one refused result took %d transactions, want 1: the others stored with it", n)
	}
	if got := settled(b2...); !strings.HasPrefix(got, "ack | term: ") || !strings.Contains(got, "unknown job ghost") || !strings.HasSuffix(got, " | ack") {
		t.Errorf("a batch with one refused result settled %s, want ack | term: ...unknown job ghost... | ack", got)
	}
	if n := combos(); n != 4 {
		t.Errorf("%d combinations stored, want 4 (the redelivered one counts once)", n)
	}

	b3 := []*recordingMsg{msg(run, testCombo("480p", 1), 3), msg(run, testCombo("480p", 2), 3)}
	c.ingester.Handle(b3[0], b3[1])
	if got := settled(b3...); got != "ack | ack" {
		t.Errorf("a redelivered batch settled %s", got)
	}
	if n := combos(); n != 4 {
		t.Errorf("%d combinations stored after a redelivered batch, want 4", n)
	}
	rej, err := c.store.Rejected(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(rej) != 1 {
		t.Errorf("%d rejections recorded, want the one refused message: %+v", len(rej), rej)
	}
}

// Messages published together are decoded side by side and stored in the
// order they came: a run's many combinations and then its final message
// leave it closed with all of them, and its job's states in order.
func TestIngestStoresInTheOrderPublished(t *testing.T) {
	c := startController(t, t.TempDir())
	ev, a := announced(t, c, "a1", "d1")
	sw := submit(t, c, protocol.Sweep{Agents: []string{"a1"}, Workload: testWorkload()})
	job := sw.Jobs[0]
	run := testRun(store.RunIDFor(job, 1), "a1")
	run.JobID, run.SweepID = job, sw.ID
	const n = 600
	var sizes []string
	for _, s := range protocol.ImageSizes() {
		sizes = append(sizes, s.Name)
	}
	pub := func(kind string, v any, id string) {
		data, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := a.js.PublishAsync(protocol.AgentSubject("a1", kind), data, jetstream.WithMsgID(id)); err != nil {
			t.Fatal(err)
		}
	}
	state := func(st protocol.JobState) {
		pub(protocol.KindState, protocol.JobStateChange{Schema: 1, JobID: job, AgentID: "a1", State: st, Time: time.Now().UTC(), Attempt: 1, RunID: run.ID},
			protocol.StateMsgID(job, st, 1))
	}
	state(protocol.JobRunning)
	for i := range n {
		cb := testCombo(sizes[i%len(sizes)], 1+i/len(sizes))
		pub(protocol.KindResult, protocol.ResultMessage{Schema: 1, AgentID: "a1", Run: run, Combination: cb}, protocol.ResultMsgID(run.ID, cb.ComboKey.String()))
	}
	closed := run
	closed.Status, closed.FinishedAt = protocol.RunCompleted, time.Now().UTC()
	pub(protocol.KindResult, protocol.ResultMessage{Schema: 1, AgentID: "a1", Run: closed, Final: true, Expected: n}, protocol.ResultMsgID(run.ID, "final"))
	state(protocol.JobCompleted)
	select {
	case <-a.js.PublishAsyncComplete():
	case <-waitCtx(t).Done():
		t.Fatal("publishing took too long")
	}
	ev.waitFor(t, 1, func(e api.Event) bool {
		s, ok := e.Data.(protocol.JobStateChange)
		return ok && s.State == protocol.JobCompleted
	})
	got, err := c.store.RunSummary(context.Background(), run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != protocol.RunCompleted || len(got.Combinations) != n {
		t.Errorf("run %s with %d combinations, want completed with %d", got.Status, len(got.Combinations), n)
	}
	j, err := c.Job(context.Background(), job)
	if err != nil {
		t.Fatal(err)
	}
	if j.State != protocol.JobCompleted {
		t.Errorf("job %s, want completed", j.State)
	}
	// A result stored before its attempt's running state is refused.
	if rej, err := c.store.Rejected(context.Background(), 0); err != nil || len(rej) != 0 {
		t.Errorf("rejected %+v (%v): the messages were stored out of order", rej, err)
	}
}
