package faults

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/controller/client"
	"github.com/vlmfleet/vlmfleet/internal/backoff"
	"github.com/vlmfleet/vlmfleet/internal/testutil"
	"github.com/vlmfleet/vlmfleet/protocol"
)

const (
	faultsEnv = "VLMFLEET_FAULTS"
	soakEnv   = "VLMFLEET_SOAK"
	// simDevice and simModel are what every simulated agent offers: one
	// deployment, so a sweep over N agents makes N jobs.
	simDevice = "Jetson AGX Orin"
	simModel  = "Cosmos3-Edge"
)

// needFaults skips the test unless the fault tests were asked for.
func needFaults(t *testing.T) {
	if os.Getenv(faultsEnv) == "" {
		t.Skipf("process-level fault test: run ./scripts/faults (or set %s=1)", faultsEnv)
	}
}

// poll is the pace of the waits on the controller's HTTP API: the tests
// restart the controller, which ends any event stream, so they look.
var poll = backoff.Policy{First: 100 * time.Millisecond, Max: time.Second}

// labOptions configure a lab of processes.
type labOptions struct {
	// natsURL is an external NATS server for the controller, with its
	// credentials in the URL; agentURL makes an agent's URL there. Empty:
	// the controller embeds NATS and enrols the agents.
	natsURL  string
	agentURL func(id string) string
	// controllerArgs are added to the controller's command line.
	controllerArgs []string
	// speedup runs the simulated engines this many times faster.
	speedup float64
	// beforeHealthy, if set, runs once the controller's first process has
	// started and before the lab waits for it to answer healthy.
	beforeHealthy func(ctrl *proc)
}

// lab is a controller and agents, each its own process, in one directory.
type lab struct {
	t   *testing.T
	ctx context.Context
	opt labOptions
	dir string
	// httpAddr and natsAddr stay the same across controller restarts.
	httpAddr, natsAddr string
	ctrl               *proc
	cl                 *client.Client
	agents             map[string]*proc
	// quietAgents keeps the agents' logs out of a failed test's output
	// (the soak runs hundreds).
	quietAgents bool
	// token is the controller's API token.
	token string
}

func newLab(t *testing.T, ctx context.Context, opt labOptions) *lab {
	if opt.speedup == 0 {
		opt.speedup = 50
	}
	l := &lab{t: t, ctx: ctx, opt: opt, dir: t.TempDir(), agents: map[string]*proc{},
		httpAddr: testutil.ClosedAddr(t), natsAddr: testutil.ClosedAddr(t)}
	for _, d := range []string{"data", "logs", "creds"} {
		if err := os.MkdirAll(filepath.Join(l.dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	l.launchController()
	if opt.beforeHealthy != nil {
		opt.beforeHealthy(l.ctrl)
	}
	l.waitHealthy()
	tok, err := os.ReadFile(filepath.Join(l.dir, "data", "api-token"))
	if err != nil {
		t.Fatal(err)
	}
	// A controller starved of CPU (the soak: hundreds of processes on two
	// cores) may take a minute to store and publish a large sweep.
	l.token = strings.TrimSpace(string(tok))
	if l.cl, err = client.New("http://"+l.httpAddr, client.WithToken(l.token),
		client.WithTimeout(3*time.Minute)); err != nil {
		t.Fatal(err)
	}
	return l
}

// startController starts (or restarts) the controller on the lab's data
// directory and addresses, and returns once its API answers healthy.
func (l *lab) startController() {
	l.t.Helper()
	l.launchController()
	l.waitHealthy()
}

// launchController starts the controller's process.
func (l *lab) launchController() {
	l.t.Helper()
	args := []string{"controller", "--data-dir", filepath.Join(l.dir, "data"), "--http", l.httpAddr}
	if l.opt.natsURL != "" {
		args = append(args, "--nats-url", l.opt.natsURL)
	} else {
		args = append(args, "--nats-listen", l.natsAddr)
	}
	args = append(args, l.opt.controllerArgs...)
	l.ctrl = start(l.t, filepath.Join(l.dir, "logs"), "controller", bin.vlmfleet, args...)
}

// waitHealthy waits until the controller answers /api/health with ok.
func (l *lab) waitHealthy() {
	l.t.Helper()
	cl, err := client.New("http://"+l.httpAddr, client.WithTimeout(2*time.Second))
	if err != nil {
		l.t.Fatal(err)
	}
	var last string
	err = poll.Retry(l.ctx, func(int) error {
		if l.ctrl.Exited() {
			return backoff.Permanent(fmt.Errorf("the controller exited"))
		}
		h, err := cl.Health(l.ctx)
		if err != nil {
			last = err.Error()
			return err
		}
		if h.Status != "ok" {
			last = fmt.Sprintf("%+v", h)
			return fmt.Errorf("status %s", h.Status)
		}
		return nil
	})
	if err != nil {
		l.t.Fatalf("controller not healthy: %v (last: %s)", err, last)
	}
}

// addAgents enrols the agents (each gets its own credentials) and starts
// them; it returns once the controller has their announcements. Every
// agent is enrolled before the first starts: an agent that signs in while
// the embedded server reloads its users for the next enrolment may be
// refused and stop.
func (l *lab) addAgents(ids ...string) {
	l.t.Helper()
	for _, id := range ids {
		if l.opt.agentURL != nil {
			continue
		}
		creds, err := l.cl.CreateAgentCredentials(l.ctx, id)
		if err != nil {
			l.t.Fatalf("credentials of %s: %v", id, err)
		}
		if err := os.WriteFile(l.credsFile(id), []byte(creds.Seed+"\n"), 0o600); err != nil {
			l.t.Fatal(err)
		}
	}
	for _, id := range ids {
		l.startAgent(id)
	}
	l.waitAnnounced(time.Time{}, ids...)
}

func (l *lab) credsFile(id string) string { return filepath.Join(l.dir, "creds", id+".nk") }

// startAgent starts (or restarts) agent id as a process.
func (l *lab) startAgent(id string) {
	l.t.Helper()
	args := []string{"agent", "--id", id, "--simulate", simDevice, "--sim-models", simModel,
		"--sim-speedup", fmt.Sprint(l.opt.speedup), "--log-dir", filepath.Join(l.dir, "logs")}
	if l.opt.agentURL != nil {
		args = append(args, "--nats-url", l.opt.agentURL(id))
	} else {
		args = append(args, "--nats-url", "nats://"+l.natsAddr, "--nats-credentials", l.credsFile(id))
	}
	p := start(l.t, filepath.Join(l.dir, "logs"), "agent-"+id, bin.vlmfleet, args...)
	p.Quiet = l.quietAgents
	l.agents[id] = p
}

// waitAnnounced waits until the controller has an announcement of each
// agent from a start at since or later.
func (l *lab) waitAnnounced(since time.Time, ids ...string) {
	l.t.Helper()
	var missing []string
	err := poll.Retry(l.ctx, func(int) error {
		agents, err := l.cl.Agents(l.ctx)
		if err != nil {
			return err
		}
		for _, id := range ids {
			if p := l.agents[id]; p != nil && p.Exited() {
				p.ShowLog()
				return backoff.Permanent(fmt.Errorf("agent %s exited", id))
			}
		}
		missing = slices.Clone(ids)
		for _, a := range agents {
			if !a.StartedAt.Before(since) {
				missing = slices.DeleteFunc(missing, func(id string) bool { return id == a.ID })
			}
		}
		if len(missing) > 0 {
			return fmt.Errorf("%d agents not announced", len(missing))
		}
		return nil
	})
	if err != nil {
		l.t.Fatalf("agents not announced: %v (first missing: %v)", err, missing[:min(len(missing), 5)])
	}
}

// workload is a small plan: two combinations of requests each.
func workload(requests int) protocol.Workload {
	w := protocol.DefaultWorkload()
	w.Sizes = []string{"480p"}
	w.Cameras = []int{1, 2}
	w.RequestsPerLevel = requests
	w.MultiImageSizes = nil
	w.ImagesPerRequest = nil
	return w
}

// submit submits one sweep over the agents.
func (l *lab) submit(w protocol.Workload, ids ...string) protocol.Sweep {
	l.t.Helper()
	s, err := l.cl.SubmitSweep(l.ctx, protocol.Sweep{Name: l.t.Name(), Agents: ids, Workload: w})
	if err != nil {
		l.t.Fatal(err)
	}
	if len(s.Jobs) != len(ids) {
		l.t.Fatalf("the sweep made %d jobs for %d agents", len(s.Jobs), len(ids))
	}
	return s
}

// waitJob waits until cond holds for the job (the controller may be
// restarting meanwhile: errors are retried).
func (l *lab) waitJob(id, what string, cond func(j api.JobView) bool) api.JobView {
	l.t.Helper()
	var j api.JobView
	err := poll.Retry(l.ctx, func(int) error {
		v, err := l.cl.Job(l.ctx, id)
		if err != nil {
			return err
		}
		if j = v; !cond(j) {
			return fmt.Errorf("job %s is %s (attempt %d)", id, j.State, j.Attempt)
		}
		return nil
	})
	if err != nil {
		l.t.Fatalf("job %s never %s: %v", id, what, err)
	}
	return j
}

// waitDone waits until every job of the sweep has ended.
func (l *lab) waitDone(s protocol.Sweep) {
	l.t.Helper()
	var st string
	err := poll.Retry(l.ctx, func(int) error {
		v, err := l.cl.Sweep(l.ctx, s.ID)
		if err != nil {
			return err
		}
		st = fmt.Sprintf("%v", v.Status.States)
		if !v.Status.Done {
			return fmt.Errorf("sweep %s: %s", s.ID, st)
		}
		return nil
	})
	if err != nil {
		l.t.Fatalf("sweep %s never ended: %v (states %s)", s.ID, err, st)
	}
}
