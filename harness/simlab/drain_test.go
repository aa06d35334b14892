package simlab_test

import (
	"strings"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/controller/client"
	"github.com/vlmfleet/vlmfleet/harness/simlab"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// A real agent drained while it runs a job finishes that job and fetches
// no more: the job queued behind it stays queued, also across a restart
// of the agent (its first heartbeat asks), until the agent is taken back.
// Its configuration's labels reach the API.
func TestDrainedAgentFinishesItsJobAndTakesNoMore(t *testing.T) {
	l := newLab(t, testContext(t, 90*time.Second), simlab.Options{})
	measured := make(chan string, 64)
	heartbeats := make(chan protocol.Heartbeat, 256)
	stop := l.Controller().OnEvent(func(ev api.Event) {
		switch d := ev.Data.(type) {
		case api.ResultEvent:
			if d.Combo != nil {
				select {
				case measured <- d.JobID:
				default:
				}
			}
		case protocol.Heartbeat:
			select {
			case heartbeats <- d:
			default:
			}
		}
	})
	defer stop()
	d := agx("drain")
	d.Labels = map[string]string{"site": "lab1"}
	a := l.startAgent(d)
	cl, err := client.New(l.url(), client.WithToken(l.Controller().APIToken()))
	if err != nil {
		t.Fatal(err)
	}
	agentView := func() api.AgentView {
		t.Helper()
		all, err := cl.Agents(l.ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range all {
			if v.ID == "drain" {
				return v
			}
		}
		t.Fatal("agent drain is not listed")
		return api.AgentView{}
	}
	if v := agentView(); v.Labels["site"] != "lab1" {
		t.Errorf("the agent's labels in the API: %v", v.Labels)
	}

	// Two combinations, so that the drain arrives between them.
	w := tinyWorkload(2)
	w.Cameras = []int{1, 2}
	running := l.submit("drain", w)
	queued := l.submit("drain", tinyWorkload(1)) // MaxAckPending 1: it waits in the stream
	for got := ""; got != running; {
		select {
		case got = <-measured:
		case <-l.ctx.Done():
			t.Fatalf("job %s never measured its first combination", running)
		}
	}
	if v, err := cl.DrainAgent(l.ctx, "drain", true); err != nil || !v.Drained {
		t.Fatalf("drain: %v, %+v", err, v)
	}
	if _, err := cl.SubmitSweep(l.ctx, protocol.Sweep{Agents: []string{"drain"}, Workload: tinyWorkload(1)}); err == nil || !strings.Contains(err.Error(), "is drained") {
		t.Errorf("a sweep naming the drained agent: %v, want refused as drained", err)
	}

	// The running job is not cut short: it completes.
	l.waitState(running, protocol.JobCompleted, 1)
	if j, err := cl.Job(l.ctx, running); err != nil || j.State != protocol.JobCompleted {
		t.Fatalf("the running job: %v, %s", err, j.State)
	}
	// Idle and drained by its own word: the fetch loop waits before its
	// next fetch, so the queued job stays queued.
	waitHeartbeat(t, l, heartbeats, "drain", func(hb protocol.Heartbeat) bool { return hb.Drained && hb.State == protocol.AgentIdle })
	if j, err := cl.Job(l.ctx, queued); err != nil || j.State != protocol.JobQueued {
		t.Fatalf("the job queued behind the drain: %v, %s; want still queued", err, j.State)
	}
	if v := agentView(); !v.Drained || !v.DrainConfirmed {
		t.Errorf("the drained agent in the API: drained %v, confirmed %v", v.Drained, v.DrainConfirmed)
	}

	// A restarted agent asks before it fetches: still no job.
	if err := a.Stop(); err != nil {
		t.Fatal(err)
	}
	restarted := time.Now()
	l.startAgent(d)
	waitHeartbeat(t, l, heartbeats, "drain", func(hb protocol.Heartbeat) bool {
		return hb.Time.After(restarted) && hb.Drained && hb.State == protocol.AgentIdle
	})
	if j, err := cl.Job(l.ctx, queued); err != nil || j.State != protocol.JobQueued {
		t.Fatalf("the queued job after the drained agent restarted: %v, %s; want still queued", err, j.State)
	}

	// Taken back, it runs the queued job.
	if v, err := cl.DrainAgent(l.ctx, "drain", false); err != nil || v.Drained {
		t.Fatalf("undrain: %v, %+v", err, v)
	}
	l.waitState(queued, protocol.JobCompleted, 1)
}

// waitHeartbeat waits for a heartbeat of the agent that matches.
func waitHeartbeat(t *testing.T, l *testLab, ch chan protocol.Heartbeat, id string, match func(protocol.Heartbeat) bool) {
	t.Helper()
	for {
		select {
		case hb := <-ch:
			if hb.AgentID == id && match(hb) {
				return
			}
		case <-l.ctx.Done():
			t.Fatalf("no matching heartbeat of %s", id)
		}
	}
}
