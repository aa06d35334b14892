package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/internal/testutil"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// linkCutEnv sets how long TestLeafSiteLinkCutMidSweep keeps the site's
// link cut (a Go duration; default 3m, the "several minutes").
const linkCutEnv = "VLMFLEET_FAULT_LINK_CUT"

func linkCut(t *testing.T) time.Duration {
	v := os.Getenv(linkCutEnv)
	if v == "" {
		return 3 * time.Minute
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 30*time.Second {
		t.Fatalf("%s=%q: want a duration of 30s or more, such as 3m", linkCutEnv, v)
	}
	return d
}

// leafSite is a hub and one remote site, each its own nats-server process,
// configured as docs/scaling.md shows: the hub runs JetStream and takes
// the site's leaf-node connection; the site's server runs no JetStream,
// holds the site's agents' users, each confined to its own subjects, and
// reaches the hub through link, a proxy the test cuts.
type leafSite struct {
	hub, site *natsServer
	link      *linkProxy
	// hubAddr takes the controller and the hub's own agents; siteAddr the
	// site's agents.
	hubAddr, siteAddr string
}

// natsUser is a users entry of a nats-server configuration: an agent
// confined to its own subjects (protocol.AgentPermissionSubjects).
func natsUser(id string) string {
	pub, sub := protocol.AgentPermissionSubjects(id)
	return fmt.Sprintf("      { user: %q, password: %q, permissions: { publish: %s, subscribe: %s } }\n",
		id, natsPassword(id), quoteList(pub), quoteList(sub))
}

func newLeafSite(t *testing.T, ctx context.Context, hubAgents, siteAgents []string) *leafSite {
	ls := &leafSite{}
	leafPort := testutil.ClosedAddr(t)
	var users strings.Builder
	fmt.Fprintf(&users, "      { user: controller, password: %q }\n", natsPassword("controller"))
	for _, id := range hubAgents {
		users.WriteString(natsUser(id))
	}
	hub := &natsServer{t: t, ctx: ctx, dir: t.TempDir(), addr: testutil.ClosedAddr(t)}
	host, port, _ := strings.Cut(hub.addr, ":")
	lhost, lport, _ := strings.Cut(leafPort, ":")
	hub.conf = testutil.WriteFile(t, filepath.Join(hub.dir, "hub.conf"), fmt.Sprintf(`server_name: hub
host: %s
port: %s
max_payload: 8MB
jetstream { store_dir: %q }
# The lab's account uses JetStream without a domain on both sides of the
# leaf connection: without this the servers deny the JetStream API across it.
default_js_domain: { VLMFLEET: "" }
leafnodes {
  host: %s
  port: %s
  # The site reaches the hub only through its link: a leaf told the hub's
  # own address would go around the proxy.
  no_advertise: true
  authorization { user: site1, password: %q, account: VLMFLEET }
}
accounts {
  VLMFLEET {
    jetstream: enabled
    users: [
%s    ]
  }
}
`, host, port, filepath.Join(hub.dir, "js"), lhost, lport, natsPassword("site1"), users.String()))
	hub.start()
	ls.hub, ls.hubAddr = hub, hub.addr
	ls.link = newLinkProxy(t, leafPort)

	users.Reset()
	fmt.Fprintf(&users, "      { user: observer, password: %q, permissions: { publish: { deny: \">\" }, subscribe: \"vlmfleet.agent.>\" } }\n",
		natsPassword("observer"))
	for _, id := range siteAgents {
		users.WriteString(natsUser(id))
	}
	site := &natsServer{t: t, ctx: ctx, dir: t.TempDir(), addr: testutil.ClosedAddr(t)}
	host, port, _ = strings.Cut(site.addr, ":")
	site.conf = testutil.WriteFile(t, filepath.Join(site.dir, "site.conf"), fmt.Sprintf(`server_name: site1
host: %s
port: %s
max_payload: 8MB
default_js_domain: { VLMFLEET: "" }
accounts {
  VLMFLEET {
    users: [
%s    ]
  }
}
leafnodes {
  reconnect: "1s"
  remotes: [ { url: "nats-leaf://site1:%s@%s", account: VLMFLEET } ]
}
`, host, port, users.String(), natsPassword("site1"), ls.link.addr()))
	site.start()
	ls.site, ls.siteAddr = site, site.addr
	return ls
}

// siteWatch reads, on the site's server, the live progress of the site's
// agents: what they measure, whether or not the hub hears it (their
// results wait in their spools, in order, while the link is cut).
type siteWatch struct {
	mu      sync.Mutex
	combos  map[string]map[int]bool // agent → combinations whose measurement was seen
	done    map[string]bool         // agent → its job's end was seen
	changed chan struct{}
}

func watchSite(t *testing.T, url string) *siteWatch {
	w := &siteWatch{combos: map[string]map[int]bool{}, done: map[string]bool{}, changed: make(chan struct{})}
	nc, err := nats.Connect(url, nats.MaxReconnects(-1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	if _, err := nc.Subscribe(protocol.AgentSubject("*", protocol.KindProgress), w.onProgress); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return w
}

func (w *siteWatch) onProgress(m *nats.Msg) {
	var p protocol.Progress
	if err := json.Unmarshal(m.Data, &p); err != nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	switch p.Phase {
	case protocol.PhaseMeasure:
		if w.combos[p.AgentID] == nil {
			w.combos[p.AgentID] = map[int]bool{}
		}
		w.combos[p.AgentID][p.ComboIdx] = true
	case protocol.PhaseDone:
		w.done[p.AgentID] = true
	default:
		return
	}
	close(w.changed)
	w.changed = make(chan struct{})
}

// measured is the set of combinations the agent was seen measuring.
func (w *siteWatch) measured(agent string) map[int]bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return maps.Clone(w.combos[agent])
}

func (w *siteWatch) ended(agent string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.done[agent]
}

// newSince counts the combinations measured that were not in before.
func (w *siteWatch) newSince(agent string, before map[int]bool) int {
	n := 0
	for i := range w.measured(agent) {
		if !before[i] {
			n++
		}
	}
	return n
}

// wait waits until cond holds, for what the site's agents publish, until
// deadline.
func (w *siteWatch) wait(ctx context.Context, deadline time.Time, cond func() bool) bool {
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	for {
		w.mu.Lock()
		ch := w.changed
		w.mu.Unlock()
		if cond() {
			return true
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return false
		}
	}
}

// A remote site reaches the hub over a leaf node, and its link is cut for
// $VLMFLEET_FAULT_LINK_CUT mid-sweep: the site's agents go on
// measuring while it is cut, finish their jobs, and one of them is even
// restarted meanwhile; once the link is back every result arrives, once,
// with no job run twice and no run failed.
func TestLeafSiteLinkCutMidSweep(t *testing.T) {
	needFaults(t)
	cut := linkCut(t)
	ctx := testContext(t, cut+4*time.Minute)
	hubAgents, siteAgents := ids("lh", 1), ids("ls", 2)
	ls := newLeafSite(t, ctx, hubAgents, siteAgents)
	l := newLab(t, ctx, labOptions{
		natsURL: "nats://controller:" + natsPassword("controller") + "@" + ls.hubAddr,
		agentURL: func(id string) string {
			addr := ls.siteAddr
			if slices.Contains(hubAgents, id) {
				addr = ls.hubAddr
			}
			return "nats://" + id + ":" + natsPassword(id) + "@" + addr
		},
	})
	watch := watchSite(t, "nats://observer:"+natsPassword("observer")+"@"+ls.siteAddr)
	all := append(slices.Clone(hubAgents), siteAgents...)
	l.addAgents(all...)

	w := workload(60)
	w.Cameras = []int{1, 2, 3, 4, 5, 6}
	s := l.submit(w, all...)
	jobOf := map[string]string{}
	for i, id := range all {
		jobOf[id] = s.Jobs[i]
	}
	for _, id := range siteAgents {
		l.waitMeasuring(jobOf[id])
	}

	before := map[string]map[int]bool{}
	for _, id := range siteAgents {
		before[id] = watch.measured(id)
	}
	ls.link.cutLink()
	cutAt := time.Now()
	// The site's agents measure on while the hub hears nothing: wait for
	// their jobs to end, within the cut, with combinations measured in it.
	ended := watch.wait(ctx, cutAt.Add(cut-10*time.Second), func() bool {
		for _, id := range siteAgents {
			if watch.newSince(id, before[id]) < 2 || !watch.ended(id) {
				return false
			}
		}
		return true
	})
	during := 0
	for _, id := range siteAgents {
		n := watch.newSince(id, before[id])
		during += n
		if n < 2 || !watch.ended(id) {
			t.Errorf("agent %s measured %d combinations during the cut (its job ended: %v), want it to go on measuring and end its job", id, n, watch.ended(id))
		}
	}
	if !ended {
		t.Fatalf("the site's agents did not go on measuring while the link was cut (%d combinations in %v)", during, time.Since(cutAt).Round(time.Second))
	}
	for _, id := range siteAgents {
		j, err := l.cl.Job(ctx, jobOf[id])
		if err != nil {
			t.Fatal(err)
		}
		if j.State == protocol.JobCompleted {
			t.Fatalf("job %s is completed at the controller while the site's link is cut: the cut did not cut", j.ID)
		}
	}

	// An agent restarted during the cut, its job ended but not yet
	// acknowledged: it must send what its spool holds and acknowledge the
	// job, not measure it again, once the link is back.
	restarted := siteAgents[1]
	l.waitEnded(restarted, jobOf[restarted], cutAt.Add(cut))
	l.agents[restarted].Signal(syscall.SIGTERM)
	<-l.agents[restarted].Done()
	restartedAt := time.Now()
	l.startAgent(restarted)

	// The cut's length is the scenario, not a wait for something.
	time.Sleep(time.Until(cutAt.Add(cut)))
	ls.link.restore()
	back := time.Now()
	l.waitAnnounced(restartedAt, restarted)
	for _, id := range siteAgents {
		l.waitJob(jobOf[id], "completed", func(j api.JobView) bool { return j.State == protocol.JobCompleted })
	}
	stored := time.Since(back)
	l.waitDone(s)
	recovery(t, "site link cut for %v mid-sweep: %d site agents measured %d combinations and ended their jobs during the cut (one restarted in it); all their results stored %v after the link was back, sweep done %v after",
		cut.Round(time.Second), len(siteAgents), during, stored.Round(time.Millisecond), time.Since(back).Round(time.Millisecond))
	o := l.outcome(s, nil)
	o.check(t)
}

// waitEnded waits, until deadline, for the agent's spool to list the job
// as ended (its last message spooled): stopped earlier, the agent would
// hand the job back mid-job. There is no event for it: the file is polled.
func (l *lab) waitEnded(agent, job string, deadline time.Time) {
	l.t.Helper()
	path := filepath.Join(l.dir, "logs", "spool", agent, "ended-jobs")
	for {
		b, err := os.ReadFile(path)
		if err == nil && slices.Contains(strings.Fields(string(b)), job) {
			return
		}
		if time.Now().After(deadline) {
			l.t.Fatalf("agent %s's spool never listed job %s as ended (%s: %q, %v)", agent, job, path, b, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
