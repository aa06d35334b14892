package controller

import (
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/vlmfleet/vlmfleet/controller/store"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// Revoking an agent ends its jobs still queued as cancelled with why, and
// takes them out of the jobs stream: the agent can no longer take them. The
// job it runs stays running: enrolled again, it gets the job back.
func TestRevokingAnAgentCancelsItsQueuedJobs(t *testing.T) {
	c := startController(t, t.TempDir())
	_, a := announced(t, c, "gone-1", "d1", "d2")
	announced(t, c, "stays-1", "d1")
	s := submit(t, c, protocol.Sweep{Agents: []string{"gone-1", "stays-1"}, Workload: testWorkload()})
	var taken, queued, other string
	for _, id := range s.Jobs {
		rec, err := c.store.Job(id)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case rec.Job.AgentID == "stays-1":
			other = id
		case taken == "":
			taken = id
		default:
			queued = id
		}
	}
	a.state(t, taken, protocol.JobRunning, 1, true)
	eventually(t, "the taken job running", func() bool {
		rec, err := c.store.Job(taken)
		return err == nil && rec.State == protocol.JobRunning
	})
	eventually(t, "both of gone-1's jobs published", func() bool {
		rec, err := c.store.Job(queued)
		return err == nil && rec.Published
	})
	if err := c.RevokeAgent(waitCtx(t), "gone-1"); err != nil {
		t.Fatal(err)
	}
	rec, err := c.store.Job(queued)
	if err != nil {
		t.Fatal(err)
	}
	if rec.State != protocol.JobCancelled || !strings.Contains(rec.Error, "agent gone-1 was revoked") {
		t.Errorf("queued job %s: %s %q, want cancelled because gone-1 was revoked", queued, rec.State, rec.Error)
	}
	if rec, _ := c.store.Job(taken); rec.State != protocol.JobRunning {
		t.Errorf("the job gone-1 runs: %s %q, want it left running", rec.State, rec.Error)
	}
	if rec, _ := c.store.Job(other); rec.State.Terminal() {
		t.Errorf("stays-1's job %s ended: %s %q", other, rec.State, rec.Error)
	}
	_, js := adminConn(t, c)
	stream, err := js.Stream(waitCtx(t), protocol.StreamJobs)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stream.GetMsg(waitCtx(t), rec.StreamSeq); err != jetstream.ErrMsgNotFound {
		t.Errorf("the queued job is still in the jobs stream: %v", err)
	}
	if jobs, err := c.store.Jobs(waitCtx(t), store.JobQuery{AgentID: "gone-1", State: protocol.JobQueued}); err != nil || len(jobs) != 0 {
		t.Errorf("gone-1 still has %d jobs queued (%v)", len(jobs), err)
	}
}
