package faults

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/internal/backoff"
	"github.com/vlmfleet/vlmfleet/internal/testutil"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// natsPauseEnv sets how long TestFaultNATSServerStopped keeps the server
// stopped (a Go duration; default 30s).
const natsPauseEnv = "VLMFLEET_FAULT_NATS_PAUSE"

func testContext(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// recovery logs how long recovery took, on a line ./scripts/faults shows.
func recovery(t *testing.T, format string, args ...any) {
	t.Helper()
	t.Logf("recovery: %s: %s", t.Name(), fmt.Sprintf(format, args...))
}

// waitMeasuring waits until the job's first attempt has stored a
// combination: it is mid-job, with something measured to lose.
func (l *lab) waitMeasuring(job string) {
	l.t.Helper()
	l.waitJob(job, "measured a combination", func(j api.JobView) bool {
		if j.State != protocol.JobRunning || j.RunID == "" {
			return false
		}
		r, err := l.cl.RunSummary(l.ctx, j.RunID)
		return err == nil && len(r.Combinations) > 0
	})
}

func ids(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%03d", prefix, i+1)
	}
	return out
}

// The controller killed mid-sweep (no clean shutdown: its embedded NATS,
// store and HTTP server die with it) and started again finishes the sweep:
// every combination stored once, no job run twice, nothing failed.
func TestFaultControllerKilledMidSweep(t *testing.T) {
	needFaults(t)
	l := newLab(t, testContext(t, 3*time.Minute), labOptions{})
	agents := ids("ck", 3)
	l.addAgents(agents...)
	s := l.submit(workload(60), agents...)
	l.waitMeasuring(s.Jobs[0])

	killed := time.Now()
	l.ctrl.Kill()
	l.startController()
	healthy := time.Since(killed)
	l.waitDone(s)
	recovery(t, "controller SIGKILLed mid-sweep and restarted: healthy after %v, sweep done %v after the kill",
		healthy.Round(time.Millisecond), time.Since(killed).Round(time.Millisecond))
	l.outcome(s, nil).check(t)
}

// An agent killed mid-job (no hand-back: JetStream delivers the job again
// after its ack wait) and started again measures the job as attempt 2; the
// attempt it was killed during is closed as failed, the other agents'
// jobs are untouched.
func TestFaultAgentKilledMidJob(t *testing.T) {
	needFaults(t)
	l := newLab(t, testContext(t, 3*time.Minute), labOptions{})
	agents := ids("ak", 3)
	l.addAgents(agents...)
	s := l.submit(workload(60), agents...)
	job := s.Jobs[0]
	l.waitMeasuring(job)
	victim := l.agents[agents[0]]

	killed := time.Now()
	victim.Kill()
	l.startAgent(agents[0])
	l.waitAnnounced(killed, agents[0])
	back := time.Since(killed)
	j := l.waitJob(job, "taken again", func(j api.JobView) bool { return j.Attempt >= 2 })
	again := time.Since(killed)
	l.waitDone(s)
	recovery(t, "agent SIGKILLed mid-job and restarted: announced after %v, job taken again as attempt %d after %v (the ack wait), sweep done %v after the kill",
		back.Round(time.Millisecond), j.Attempt, again.Round(time.Millisecond), time.Since(killed).Round(time.Millisecond))

	o := l.outcome(s, map[string]bool{job: true})
	o.check(t)
	first, err := l.cl.RunSummary(l.ctx, job+"-a1")
	if err != nil {
		t.Fatalf("the killed attempt's run: %v", err)
	}
	if first.Status != protocol.RunFailed || !strings.Contains(first.Error, "the agent stopped during this attempt") {
		t.Errorf("the killed attempt's run is %s (%q), want it failed as stopped", first.Status, first.Error)
	}
}

// natsPause is how long the NATS tests keep the server down.
func natsPause(t *testing.T) time.Duration {
	v := os.Getenv(natsPauseEnv)
	if v == "" {
		return 30 * time.Second
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		t.Fatalf("%s=%q: want a positive duration such as 30s", natsPauseEnv, v)
	}
	return d
}

// An external NATS server stopped (SIGSTOP: connections stay open, nothing
// answers) for $VLMFLEET_FAULT_NATS_PAUSE mid-sweep and continued loses
// nothing: the agents and the controller wait and retry, and the sweep ends
// with every combination stored once.
func TestFaultNATSServerStopped(t *testing.T) {
	needFaults(t)
	natsOutage(t, "ns", func(ns *natsServer, pause time.Duration) {
		ns.proc.Signal(syscall.SIGSTOP)
		// The outage's length is the scenario, not a wait for something.
		time.Sleep(pause)
		ns.proc.Signal(syscall.SIGCONT)
	})
}

// An external NATS server killed (SIGKILL: connections drop, JetStream
// recovers its file store on the next start) and started again after
// $VLMFLEET_FAULT_NATS_PAUSE loses nothing either.
func TestFaultNATSServerKilled(t *testing.T) {
	needFaults(t)
	natsOutage(t, "nk", func(ns *natsServer, pause time.Duration) {
		ns.proc.Kill()
		time.Sleep(pause) // the outage's length is the scenario
		ns.start()
	})
}

// natsOutage runs a sweep over three agents on an external NATS server and
// takes the server away with outage once the first job has measured a
// combination.
func natsOutage(t *testing.T, prefix string, outage func(ns *natsServer, pause time.Duration)) {
	pause := natsPause(t)
	ctx := testContext(t, 3*time.Minute+pause)
	agents := ids(prefix, 3)
	ns := newNATS(t, ctx, agents)
	l := newLab(t, ctx, labOptions{
		natsURL:  "nats://controller:" + natsPassword("controller") + "@" + ns.addr,
		agentURL: func(id string) string { return "nats://" + id + ":" + natsPassword(id) + "@" + ns.addr },
	})
	l.addAgents(agents...)
	s := l.submit(workload(60), agents...)
	l.waitMeasuring(s.Jobs[0])

	down := time.Now()
	outage(ns, pause)
	back := time.Now()
	l.waitHealthy()
	healthy := time.Since(back)
	l.waitDone(s)
	recovery(t, "nats-server down for %v mid-sweep: controller healthy %v after it was back, sweep done %v after it was back",
		back.Sub(down).Round(time.Millisecond), healthy.Round(time.Millisecond), time.Since(back).Round(time.Millisecond))
	l.outcome(s, nil).check(t)
}

// natsServer is an external nats-server process configured as
// deploy/nats-server.conf shows: JetStream on a file store, one account
// with a controller user and one confined user per agent.
type natsServer struct {
	t    *testing.T
	ctx  context.Context
	dir  string
	conf string
	addr string
	proc *proc
}

// natsPassword is the test's password of a NATS user.
func natsPassword(user string) string { return "pw-" + user }

func newNATS(t *testing.T, ctx context.Context, agents []string) *natsServer {
	ns := &natsServer{t: t, ctx: ctx, dir: t.TempDir(), addr: testutil.ClosedAddr(t)}
	host, port, _ := strings.Cut(ns.addr, ":")
	conf := fmt.Sprintf(`host: %s
port: %s
max_payload: 8MB
jetstream { store_dir: %q }
%s`, host, port, filepath.Join(ns.dir, "js"), natsAccounts(agents))
	ns.conf = testutil.WriteFile(t, filepath.Join(ns.dir, "nats-server.conf"), conf)
	ns.start()
	return ns
}

// natsAccounts is the accounts block of a server's configuration: one
// account with JetStream, the controller's user and each agent's, confined
// as deploy/nats-server.conf shows.
func natsAccounts(agents []string) string {
	var users strings.Builder
	fmt.Fprintf(&users, "      { user: controller, password: %q }\n", natsPassword("controller"))
	for _, id := range agents {
		pub, sub := protocol.AgentPermissionSubjects(id)
		fmt.Fprintf(&users, "      { user: %q, password: %q, permissions: { publish: %s, subscribe: %s } }\n",
			id, natsPassword(id), quoteList(pub), quoteList(sub))
	}
	return fmt.Sprintf(`accounts {
  VLMFLEET {
    jetstream: enabled
    users: [
%s    ]
  }
}
`, users.String())
}

// start starts (or restarts) the server and returns once it takes
// connections.
func (ns *natsServer) start() {
	ns.t.Helper()
	ns.proc = start(ns.t, ns.dir, "nats-server", bin.natsServer, "-c", ns.conf)
	err := poll.Retry(ns.ctx, func(int) error {
		if ns.proc.Exited() {
			return backoff.Permanent(fmt.Errorf("nats-server exited"))
		}
		c, err := dialTCP(ns.addr)
		if err == nil {
			_ = c.Close()
		}
		return err
	})
	if err != nil {
		ns.t.Fatalf("nats-server at %s: %v", ns.addr, err)
	}
}

func quoteList(s []string) string {
	q := make([]string, len(s))
	for i, v := range s {
		q[i] = fmt.Sprintf("%q", v)
	}
	return "[" + strings.Join(q, ", ") + "]"
}
