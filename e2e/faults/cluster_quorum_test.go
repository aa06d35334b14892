package faults

import (
	"testing"
	"time"
)

// A controller started while its cluster has no quorum (one node of three
// up, as when a lab's machines come back from a power cut one by one)
// keeps asking JetStream to set up its streams instead of exiting at the
// first unanswered request, and serves once the other nodes are up: its
// streams in 3 copies, a sweep measured and stored.
func TestNATSClusterControllerStartsBeforeQuorum(t *testing.T) {
	needFaults(t)
	ctx := testContext(t, 3*time.Minute)
	agents := ids("nq", 1)
	cluster := configureNATSCluster(t, ctx, agents)
	cluster.startNode(cluster.nodes[0])
	cluster.waitListening(cluster.nodes[0])
	l := newLab(t, ctx, labOptions{
		natsURL:        cluster.urls("controller"),
		agentURL:       cluster.urls,
		controllerArgs: []string{"--stream-replicas", "3"},
		beforeHealthy: func(ctrl *proc) {
			// It met JetStream without a leader and tried again.
			ctrl.WaitLogged(ctx, "JetStream is not answering yet")
			for _, n := range cluster.nodes[1:] {
				cluster.startNode(n)
			}
		},
	})
	started := time.Now()
	cluster.waitFormed()
	cluster.checkCopies(3)
	l.addAgents(agents...)
	s := l.submit(workload(4), agents...)
	l.waitDone(s)
	l.outcome(s, nil).check(t)
	recovery(t, "controller started with 1 of 3 cluster nodes up: healthy, its streams in 3 copies and a sweep stored %v after the other two started",
		time.Since(started).Round(time.Millisecond))
}
