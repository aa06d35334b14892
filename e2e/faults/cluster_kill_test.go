package faults

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/vlmfleet/vlmfleet/controller"
	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/controller/client"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// nodeLossStall bounds how long ingestion may stand still after the node
// leading the events stream and the controller's consumer is lost: a new
// leader is elected within 9 s, and the controller pulls again from it
// after two missed heartbeats (10 s). With nats.go's default heartbeat it
// stood still for 30 s.
const nodeLossStall = 25 * time.Second

// A 3-node NATS cluster with the streams kept in 3 copies loses one node
// (SIGKILL, the node leading the events stream, where every result is
// written first) mid-sweep: the controller and the agents, given every
// node's URL, go on through the other two, and the sweep ends with every
// combination stored once, nothing rejected, nothing failed and no job
// run twice. The node started again catches up with the streams.
func TestNATSClusterNodeKilledMidSweep(t *testing.T) {
	needFaults(t)
	ctx := testContext(t, 3*time.Minute)
	agents := ids("nc", 3)
	cluster := newNATSCluster(t, ctx, agents)
	// A lab that ran with one copy of each stream is restarted with 3:
	// the controller scales the streams, and its consumer follows.
	l := newLab(t, ctx, labOptions{
		natsURL:        cluster.urls("controller"),
		agentURL:       cluster.urls,
		controllerArgs: []string{"--stream-replicas", "1"},
	})
	cluster.checkCopies(1)
	l.ctrl.Signal(syscall.SIGTERM)
	<-l.ctrl.Done()
	l.opt.controllerArgs = []string{"--stream-replicas", "3"}
	l.startController()
	cluster.checkCopies(3)
	l.addAgents(agents...)
	s := l.submit(workload(60), agents...)
	l.waitMeasuring(s.Jobs[0])

	info, err := cluster.streamInfo(protocol.StreamEvents)
	if err != nil {
		t.Fatal(err)
	}
	victim := cluster.node(info.Cluster.Leader)
	// The worst node to lose: every result is written through it and read
	// back through it by the controller's consumer, which it leads too.
	cluster.moveConsumerLeader(protocol.StreamEvents, controller.ConsumerName, victim.name)
	t.Logf("killing nats-server %s (%s), the leader of %s and of the controller's consumer", victim.name, victim.addr, protocol.StreamEvents)
	killed := time.Now()
	victim.proc.Kill()

	// What was stored by now was written before the kill or carried by
	// the remaining replicas; the next one went through the new leader.
	stored, total := l.storedCombinations(s), len(s.Jobs)*len(s.Workload.Plan())
	if stored >= total {
		t.Fatalf("all %d combinations were stored before the kill took effect: the sweep is too short to test anything", total)
	}
	l.waitStored(s, stored+1)
	next := time.Since(killed)
	if next > nodeLossStall {
		t.Errorf("the next result was stored %v after the kill, want within %v: JetStream's election (4-9 s) and the controller's pull heartbeat (two missed at 5 s) bound it",
			next.Round(time.Millisecond), nodeLossStall)
	}
	l.waitDone(s)
	done := time.Since(killed)
	recovery(t, "nats-server %s (leader of %s and its consumer controller) SIGKILLed mid-sweep in a 3-node cluster: next result stored %v after the kill, sweep done %v after it",
		victim.name, protocol.StreamEvents, next.Round(time.Millisecond), done.Round(time.Millisecond))
	l.outcome(s, nil).check(t)
	// Two copies of three still take writes; /api/health says that a
	// second loss would stop them.
	l.waitReplicasProblem(func(p *api.HealthProblem) bool {
		return p != nil && strings.Contains(p.Error, protocol.StreamEvents+": 2 of 3 copies current ("+victim.name)
	}, "the lost copies on "+victim.name+" reported")

	restarted := time.Now()
	cluster.startNode(victim)
	cluster.waitCaughtUp(victim.name, protocol.StreamJobs, protocol.StreamEvents, controller.AdvisoriesStream)
	caught := time.Since(restarted)
	l.waitReplicasProblem(func(p *api.HealthProblem) bool { return p == nil }, "the replicas problem cleared")
	t.Logf("nats-server %s restarted: caught up with the streams after %v, /api/health ok after %v",
		victim.name, caught.Round(time.Millisecond), time.Since(restarted).Round(time.Millisecond))
}

// waitReplicasProblem waits until /api/health's replicas problem (nil when
// there is none) satisfies cond.
func (l *lab) waitReplicasProblem(cond func(*api.HealthProblem) bool, what string) {
	l.t.Helper()
	var last string
	err := poll.Retry(l.ctx, func(int) error {
		h, err := l.cl.Health(l.ctx)
		if err != nil {
			return err
		}
		var p *api.HealthProblem
		for i := range h.Problems {
			if h.Problems[i].Component == controller.ProblemReplicas {
				p = &h.Problems[i]
			}
		}
		if !cond(p) {
			last = fmt.Sprintf("%s: %+v", h.Status, h.Problems)
			return errors.New(last)
		}
		return nil
	})
	if err != nil {
		l.t.Fatalf("never %s: %v (last: %s)", what, err, last)
	}
}

// checkCopies waits until every stream of the controller, and the
// controller's consumer, is kept in n copies (a scaled stream adds its
// peers as the meta leader assigns them).
func (c *natsCluster) checkCopies(n int) {
	c.t.Helper()
	var last string
	err := poll.Retry(c.ctx, func(int) error {
		for _, name := range []string{protocol.StreamJobs, protocol.StreamEvents, controller.AdvisoriesStream} {
			info, err := c.streamInfo(name)
			if err != nil {
				return err
			}
			if info.Config.Replicas != n || info.Cluster == nil || len(info.Cluster.Replicas) != n-1 {
				last = fmt.Sprintf("stream %s: %d replicas configured, cluster %+v", name, info.Config.Replicas, info.Cluster)
				return errors.New(last)
			}
		}
		info, err := c.consumerInfo(protocol.StreamEvents, controller.ConsumerName)
		if err != nil {
			return err
		}
		if info.Cluster == nil || len(info.Cluster.Replicas) != n-1 {
			last = fmt.Sprintf("consumer %s: cluster %+v", controller.ConsumerName, info.Cluster)
			return errors.New(last)
		}
		return nil
	})
	if err != nil {
		c.t.Fatalf("not kept in %d copies: %v (last: %s)", n, err, last)
	}
}

// storedCombinations counts the combinations the controller stored for
// the sweep's runs.
func (l *lab) storedCombinations(s protocol.Sweep) int {
	l.t.Helper()
	runs, err := l.cl.Runs(l.ctx, client.RunFilter{Sweep: s.ID})
	if err != nil {
		l.t.Fatal(err)
	}
	n := 0
	for _, r := range runs {
		n += len(r.Combinations)
	}
	return n
}

// waitStored waits until the controller has stored n combinations of the
// sweep.
func (l *lab) waitStored(s protocol.Sweep, n int) {
	l.t.Helper()
	err := poll.Retry(l.ctx, func(int) error {
		runs, err := l.cl.Runs(l.ctx, client.RunFilter{Sweep: s.ID})
		if err != nil {
			return err
		}
		got := 0
		for _, r := range runs {
			got += len(r.Combinations)
		}
		if got < n {
			return fmt.Errorf("%d of %d combinations stored", got, n)
		}
		return nil
	})
	if err != nil {
		l.t.Fatalf("sweep %s: %v", s.ID, err)
	}
}

// waitCaughtUp waits until node is a current replica of every stream
// named, with nothing left to apply.
func (c *natsCluster) waitCaughtUp(node string, streams ...string) {
	c.t.Helper()
	var last string
	err := poll.Retry(c.ctx, func(int) error {
		for _, name := range streams {
			info, err := c.streamInfo(name)
			if err != nil {
				last = err.Error()
				return err
			}
			if err := caughtUp(info, node); err != nil {
				last = err.Error()
				return err
			}
		}
		return nil
	})
	if err != nil {
		c.t.Fatalf("nats-server %s never caught up: %v (last: %s)", node, err, last)
	}
}

// caughtUp says whether node is the leader of the stream or a current
// replica of it, with no lag.
func caughtUp(info *jetstream.StreamInfo, node string) error {
	if info.Cluster == nil {
		return fmt.Errorf("stream %s: no cluster information", info.Config.Name)
	}
	if info.Cluster.Leader == node {
		return nil
	}
	for _, p := range info.Cluster.Replicas {
		if p.Name == node {
			if !p.Current || p.Offline || p.Lag > 0 {
				return fmt.Errorf("stream %s: %s current %v, offline %v, lag %d", info.Config.Name, node, p.Current, p.Offline, p.Lag)
			}
			return nil
		}
	}
	return fmt.Errorf("stream %s: %s is not among its replicas (leader %s)", info.Config.Name, node, info.Cluster.Leader)
}
