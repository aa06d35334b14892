package store

import (
	"context"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// The view in memory says what the file says after every kind of write
// that changes agents and jobs, a write that fails changes nothing in it,
// and a store opened again reads the same view from the file.
func TestViewFollowsTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "vlmfleet.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(1700000000, 0).UTC()
	for _, id := range []string{"b2", "a1", "c3"} {
		if err := s.PutAgentHello(protocol.AgentHello{Schema: 1, Level: protocol.AgentLevel, AgentID: id, Hostname: "h-" + id, StartedAt: t0}, t0); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.TouchAgents(map[string]time.Time{"a1": t0.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetDrained("c3", true, t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	sw := protocol.Sweep{ID: "sw1", Workload: testWorkload(), CreatedAt: t0}
	var jobs []JobRecord
	for _, id := range []string{"j1", "j2", "j3", "j4"} {
		sw.Jobs = append(sw.Jobs, id)
		jobs = append(jobs, JobRecord{Job: protocol.Job{Schema: 1, ID: id, SweepID: sw.ID, AgentID: "a1", Deployment: "d1", Workload: sw.Workload, CreatedAt: t0},
			State: protocol.JobQueued, UpdatedAt: t0})
	}
	if err := s.CreateSweep(sw, jobs); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkPublished(t0, map[string]uint64{"j1": 1, "j2": 2}); err != nil {
		t.Fatal(err)
	}
	report := func(job string, st protocol.JobState) {
		t.Helper()
		ch := protocol.JobStateChange{Schema: 1, JobID: job, AgentID: "a1", State: st, Attempt: 1, RunID: RunIDFor(job, 1), Time: t0}
		if _, _, err := s.ApplyJobState(ch, t0); err != nil {
			t.Fatal(err)
		}
	}
	report("j1", protocol.JobAccepted)
	report("j1", protocol.JobRunning)
	report("j2", protocol.JobAccepted)
	report("j2", protocol.JobCompleted)
	if _, _, err := s.RequestCancel("j3", t0.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.CancelJob(protocol.JobStateChange{JobID: "j3", AgentID: "a1", Attempt: 1, Time: t0}, t0); err != nil {
		t.Fatal(err)
	}
	j4 := jobs[3]
	j4.State, j4.Error = protocol.JobRejected, "unknown deployment"
	if err := s.PutJob(j4); err != nil {
		t.Fatal(err)
	}
	// A write that fails leaves the view as it was.
	before := s.JobStates()
	if err := s.CreateSweep(protocol.Sweep{ID: "sw2", Jobs: []string{"j1"}}, jobs[:1]); err == nil {
		t.Fatal("a sweep reusing a job id was stored")
	}
	if got := s.JobStates(); !maps.Equal(got, before) {
		t.Errorf("a failed write changed the counts from %v to %v", before, got)
	}

	want := map[protocol.JobState]int{protocol.JobRunning: 1, protocol.JobCompleted: 1, protocol.JobCancelled: 1, protocol.JobRejected: 1}
	checkView(t, s, want)
	agents, _ := s.Agents(context.Background())
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	checkView(t, s, want)
	reopened, _ := s.Agents(context.Background())
	if !reflect.DeepEqual(reopened, agents) {
		t.Errorf("agents read again from the file:\n%+v\nwant what the view held:\n%+v", reopened, agents)
	}
}

// checkView compares the view with the file: the agents as the file holds
// them, in id order, and the jobs' counts and open records.
func checkView(t *testing.T, s *Store, want map[protocol.JobState]int) {
	t.Helper()
	ctx := context.Background()
	fromFile, err := getAll[Agent](ctx, s, bucketAgents, "agents", nil)
	if err != nil {
		t.Fatal(err)
	}
	agents, err := s.Agents(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(agents, fromFile) {
		t.Errorf("agents in memory:\n%+v\nin the file:\n%+v", agents, fromFile)
	}
	if got := s.JobStates(); !maps.Equal(got, want) {
		t.Errorf("jobs by state %v, want %v", got, want)
	}
	if got := s.SweepJobStates([]string{"sw1", "none"}); len(got) != 1 || !maps.Equal(got["sw1"], want) {
		t.Errorf("sweep jobs by state %v, want sw1: %v", got, want)
	}
	if got := s.UnfinishedSweepJobStates(); len(got) != 1 || !maps.Equal(got["sw1"], want) {
		t.Errorf("unfinished sweeps %v, want sw1: %v", got, want)
	}
	open := s.OpenJobs("sw1")
	if len(open) != 1 || open[0].Job.ID != "j1" || open[0].State != protocol.JobRunning {
		t.Fatalf("open jobs %+v, want j1 running", open)
	}
	j1, err := s.Job("j1")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(open[0], j1) {
		t.Errorf("open job in memory:\n%+v\nin the file:\n%+v", open[0], j1)
	}
	if ids := s.OpenJobs(""); len(ids) != 1 || !slices.ContainsFunc(ids, func(j JobRecord) bool { return j.Job.ID == "j1" }) {
		t.Errorf("open jobs of every sweep %+v, want j1", ids)
	}
	active, err := s.Jobs(ctx, JobQuery{Active: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := s.ActiveJobs(); !reflect.DeepEqual(got, active) {
		t.Errorf("active jobs in memory:\n%+v\nin the file:\n%+v", got, active)
	}
}

// ActiveJobs, from memory, lists what Jobs with Active reads from the
// file, in its order: oldest first, by id within a sweep.
func TestActiveJobsInTheOrderJobsLists(t *testing.T) {
	s := openTest(t)
	t0 := time.Unix(1700000000, 0).UTC()
	mk := func(sweep string, at time.Time, ids ...string) {
		t.Helper()
		sw := protocol.Sweep{ID: sweep, Workload: testWorkload(), CreatedAt: at, Jobs: ids}
		var jobs []JobRecord
		for _, id := range ids {
			jobs = append(jobs, JobRecord{Job: protocol.Job{Schema: 1, ID: id, SweepID: sweep, AgentID: "a1", Deployment: "d1", Workload: sw.Workload, CreatedAt: at},
				State: protocol.JobQueued, UpdatedAt: at})
		}
		if err := s.CreateSweep(sw, jobs); err != nil {
			t.Fatal(err)
		}
	}
	mk("swB", t0, "b2", "b1", "b3")
	mk("swA", t0.Add(-time.Hour), "z2", "z1")
	ch := protocol.JobStateChange{Schema: 1, JobID: "b3", AgentID: "a1", State: protocol.JobCompleted, Attempt: 1, RunID: RunIDFor("b3", 1), Time: t0}
	if _, _, err := s.ApplyJobState(ch, t0); err != nil {
		t.Fatal(err)
	}
	want, err := s.Jobs(context.Background(), JobQuery{Active: true})
	if err != nil {
		t.Fatal(err)
	}
	got := s.ActiveJobs()
	var ids []string
	for _, j := range got {
		ids = append(ids, j.Job.ID)
	}
	if !slices.Equal(ids, []string{"z1", "z2", "b1", "b2"}) || !reflect.DeepEqual(got, want) {
		t.Errorf("active jobs %v (%+v), want those of Jobs: %+v", ids, got, want)
	}
}

// A write waits until the one that committed before it has changed the
// view: otherwise the earlier change, applied last, would leave the view
// holding a record the file no longer has.
func TestViewAppliesWritesInTheOrderTheyCommit(t *testing.T) {
	s := openTest(t)
	t0 := time.Unix(1700000000, 0).UTC()
	if err := s.PutAgentHello(protocol.AgentHello{Schema: 1, Level: protocol.AgentLevel, AgentID: "a1", StartedAt: t0}, t0); err != nil {
		t.Fatal(err)
	}
	committed, release := make(chan struct{}), make(chan struct{})
	var first atomic.Bool
	s.view.testHookApply = func() {
		if first.CompareAndSwap(false, true) { // the touch's; later writes pass
			close(committed)
			<-release
		}
	}
	touched := make(chan error, 1)
	go func() { touched <- s.TouchAgents(map[string]time.Time{"a1": t0.Add(time.Minute)}) }()
	<-committed
	drained := make(chan error, 1)
	go func() {
		_, err := s.SetDrained("a1", true, t0.Add(time.Hour))
		drained <- err
	}()
	// The drain must not finish while the touch's change is still on its
	// way to the view. It cannot be seen waiting, only not finishing.
	select {
	case err := <-drained:
		t.Fatalf("a write finished (%v) before the one committed ahead of it reached the view", err)
	case <-time.After(200 * time.Millisecond):
	}
	close(release)
	if err := <-touched; err != nil {
		t.Fatal(err)
	}
	if err := <-drained; err != nil {
		t.Fatal(err)
	}
	a, err := s.Agent("a1")
	if err != nil {
		t.Fatal(err)
	}
	if !a.Drained || !a.LastSeen.Equal(t0.Add(time.Minute)) {
		t.Errorf("the view holds %+v, want drained and last seen a minute in", a)
	}
}
