package store

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/protocol"
	bolt "go.etcd.io/bbolt"
)

// walk reads every page of list, Limit at a time, calling between(i)
// after page i, and returns the ids in the order the pages gave them.
func walk(t *testing.T, limit int, newest bool, list func(p Page) ([]string, string, error), between func(page int)) []string {
	t.Helper()
	var ids []string
	p := Page{Limit: limit, Newest: newest}
	for page := 0; ; page++ {
		got, next, err := list(p)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) > limit {
			t.Fatalf("page %d: %d records, limit %d", page, len(got), limit)
		}
		if next != "" && len(got) != limit {
			t.Fatalf("page %d: %d records with a next page; a page before the last is full", page, len(got))
		}
		ids = append(ids, got...)
		if next == "" {
			return ids
		}
		if between != nil {
			between(page)
		}
		p.After = next
		if page > 1000 {
			t.Fatal("the pages never end")
		}
	}
}

func runIDs(s *Store, q RunQuery) func(p Page) ([]string, string, error) {
	return func(p Page) ([]string, string, error) {
		runs, next, err := s.RunsPage(context.Background(), q, p)
		var ids []string
		for _, r := range runs {
			ids = append(ids, r.ID)
		}
		return ids, next, err
	}
}

func importRuns(t *testing.T, s *Store, ids ...string) {
	t.Helper()
	var entries []ImportEntry
	for _, id := range ids {
		r := testRun(id, "a1")
		r.Status = protocol.RunCompleted
		r.FinishedAt = r.CreatedAt
		c := combo("480p", 1)
		c.Requests = nil
		r.Combinations = []protocol.Combination{*c}
		entries = append(entries, ImportEntry{Origin: "test", Run: r})
	}
	if _, err := s.ImportRuns(entries); err != nil {
		t.Fatal(err)
	}
}

// A page starts after the last key of the one before: runs written
// between two pages neither repeat what was listed nor push a run off the
// next page, as an offset would.
func TestRunsPagesAreStableUnderInserts(t *testing.T) {
	s := openTest(t)
	var ids []string
	for i := range 10 {
		ids = append(ids, fmt.Sprintf("r%02d", 2*i+1)) // r01, r03, … r19
	}
	importRuns(t, s, ids...)
	got := walk(t, 3, false, runIDs(s, RunQuery{}), func(page int) {
		// After the first page (r01 r03 r05): one run before the cursor,
		// one after it.
		if page == 0 {
			importRuns(t, s, "r00", "r06")
		}
	})
	want := append(slices.Clone(ids[:3]), "r06")
	want = append(want, ids[3:]...)
	if !slices.Equal(got, want) {
		t.Fatalf("pages gave %v, want %v", got, want)
	}

	got = walk(t, 4, true, runIDs(s, RunQuery{}), nil)
	all := append(slices.Clone(ids), "r00", "r06")
	slices.Sort(all)
	slices.Reverse(all)
	if !slices.Equal(got, all) {
		t.Fatalf("newest first gave %v, want %v", got, all)
	}
	runs, _, err := s.RunsPage(context.Background(), RunQuery{}, Page{Limit: 1})
	if err != nil || len(runs) != 1 || len(runs[0].Combinations) != 1 {
		t.Fatalf("a page's runs carry their combinations: %+v, %v", runs, err)
	}
}

func TestRunsPageFilters(t *testing.T) {
	s := openTest(t)
	var ids []string
	for i := range 12 {
		ids = append(ids, fmt.Sprintf("r%02d", i))
	}
	importRuns(t, s, ids...)
	// Every third run is of agent a2: a filter's page skips the others and
	// still fills up.
	var entries []ImportEntry
	var want []string
	for i := 0; i < 12; i += 3 {
		r := testRun(ids[i], "a2")
		r.Status, r.FinishedAt = protocol.RunFailed, r.CreatedAt
		entries = append(entries, ImportEntry{Origin: "test", Run: r})
		want = append(want, ids[i])
	}
	if _, err := s.ImportRuns(entries); err != nil {
		t.Fatal(err)
	}
	if got := walk(t, 2, false, runIDs(s, RunQuery{AgentID: "a2"}), nil); !slices.Equal(got, want) {
		t.Fatalf("agent a2: %v, want %v", got, want)
	}
	if got := walk(t, 1, true, runIDs(s, RunQuery{Status: protocol.RunFailed, Source: protocol.SourceImport}), nil); !slices.Equal(got, []string{"r09", "r06", "r03", "r00"}) {
		t.Fatalf("failed imports, newest first: %v", got)
	}
	if got := walk(t, 5, false, runIDs(s, RunQuery{AgentID: "nobody"}), nil); len(got) != 0 {
		t.Fatalf("agent nobody: %v", got)
	}
}

// makeSweep stores a sweep of n jobs the way the scheduler does: job ids
// are the sweep's with -j1 … -jn.
func makeSweep(t *testing.T, s *Store, id string, agents []string, n int) []string {
	t.Helper()
	at := time.Unix(1700000000, 0).UTC()
	sw := protocol.Sweep{ID: id, Workload: testWorkload(), CreatedAt: at}
	var recs []JobRecord
	for k := range n {
		jid := fmt.Sprintf("%s-j%d", id, k+1)
		sw.Jobs = append(sw.Jobs, jid)
		st := protocol.JobQueued
		if k%2 == 1 {
			st = protocol.JobCompleted
		}
		recs = append(recs, JobRecord{Job: protocol.Job{ID: jid, SweepID: id, AgentID: agents[k%len(agents)], Deployment: "d", Workload: sw.Workload, CreatedAt: at}, State: st})
	}
	if err := s.CreateSweep(sw, recs); err != nil {
		t.Fatal(err)
	}
	return sw.Jobs
}

func jobIDs(s *Store, q JobQuery) func(p Page) ([]string, string, error) {
	return func(p Page) ([]string, string, error) {
		jobs, next, err := s.JobsPage(context.Background(), q, p)
		var ids []string
		for _, j := range jobs {
			ids = append(ids, j.Job.ID)
		}
		return ids, next, err
	}
}

// A sweep's jobs come from the ids its record lists, and the pages of one
// sweep, or of any filter, hold exactly the jobs a scan would find.
func TestJobsPagesMatchTheFilters(t *testing.T) {
	s := openTest(t)
	agents := []string{"a1", "a2", "a3"}
	a := makeSweep(t, s, "sw-20261101-000000-aaaa", agents, 12)
	b := makeSweep(t, s, "sw-20261101-000100-bbbb", agents, 7)
	// A job stored on its own names a sweep with no record: found by a scan.
	lone := JobRecord{Job: protocol.Job{ID: "lone-1", SweepID: "sw-gone", AgentID: "a1", Deployment: "d", Workload: testWorkload()}, State: protocol.JobQueued}
	if err := s.PutJob(lone); err != nil {
		t.Fatal(err)
	}
	all, err := s.Jobs(context.Background(), JobQuery{})
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []JobQuery{
		{}, {SweepID: a[0][:23]}, {SweepID: "sw-20261101-000100-bbbb", AgentID: "a2"}, {AgentID: "a3", Active: true},
		{State: protocol.JobCompleted}, {SweepID: "sw-gone"}, {SweepID: "sw-none"}, {SweepID: "sw-20261101-000000-aaaa", State: protocol.JobQueued},
	} {
		var want []string
		for _, j := range all {
			if q.keeps(j.Job.SweepID, j.Job.AgentID, j.State) {
				want = append(want, j.Job.ID)
			}
		}
		slices.Sort(want)
		for _, limit := range []int{1, 4, 100} {
			got := walk(t, limit, false, jobIDs(s, q), nil)
			if !slices.Equal(got, want) {
				t.Fatalf("%+v limit %d: %v, want %v", q, limit, got, want)
			}
			rev := slices.Clone(want)
			slices.Reverse(rev)
			if got := walk(t, limit, true, jobIDs(s, q), nil); !slices.Equal(got, rev) {
				t.Fatalf("%+v limit %d newest first: %v, want %v", q, limit, got, rev)
			}
		}
		// Jobs reads a sweep by its record too, and keeps its order.
		jobs, err := s.Jobs(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		if len(jobs) != len(want) {
			t.Fatalf("Jobs(%+v): %d jobs, want %d", q, len(jobs), len(want))
		}
	}
	bySweep, err := s.JobsOfSweeps(context.Background(), []string{"sw-20261101-000100-bbbb", "sw-none"})
	if err != nil {
		t.Fatal(err)
	}
	if got := bySweep["sw-20261101-000100-bbbb"]; len(got) != len(b) || got[0].Job.ID != b[0] || got[6].Job.ID != b[6] {
		t.Fatalf("jobs of sweep b: %d jobs, want %v in order", len(got), b)
	}
	if len(bySweep["sw-none"]) != 0 {
		t.Fatalf("an unknown sweep has jobs: %v", bySweep["sw-none"])
	}
}

func TestSweepsAndRejectedPages(t *testing.T) {
	s := openTest(t)
	var sweeps []string
	for i := range 5 {
		id := fmt.Sprintf("sw-20261101-00%02d00-cccc", i)
		makeSweep(t, s, id, []string{"a1"}, 1)
		sweeps = append(sweeps, id)
	}
	list := func(p Page) ([]string, string, error) {
		sw, next, err := s.SweepsPage(context.Background(), p)
		var ids []string
		for _, x := range sw {
			ids = append(ids, x.ID)
		}
		return ids, next, err
	}
	if got := walk(t, 2, false, list, nil); !slices.Equal(got, sweeps) {
		t.Fatalf("sweeps: %v, want %v", got, sweeps)
	}
	reject := func(n int) {
		for range n {
			if err := s.Reject(Rejection{Reason: "test"}, []byte("x")); err != nil {
				t.Fatal(err)
			}
		}
	}
	reject(7)
	rej := func(p Page) ([]string, string, error) {
		rs, next, err := s.RejectedPage(context.Background(), p)
		var ids []string
		for _, r := range rs {
			ids = append(ids, fmt.Sprint(r.Seq))
		}
		return ids, next, err
	}
	if got := walk(t, 3, true, rej, func(page int) { reject(1) }); !slices.Equal(got, []string{"7", "6", "5", "4", "3", "2", "1"}) {
		t.Fatalf("rejected newest first, one recorded between pages: %v", got)
	}
	if _, _, err := s.RejectedPage(context.Background(), Page{}); err == nil {
		t.Fatal("a page of limit 0 was answered")
	}
}

func sweepIDs(t *testing.T, s *Store, limit int, newest bool) []string {
	t.Helper()
	return walk(t, limit, newest, func(p Page) ([]string, string, error) {
		sw, next, err := s.SweepsPage(context.Background(), p)
		var ids []string
		for _, x := range sw {
			ids = append(ids, x.ID)
		}
		return ids, next, err
	}, nil)
}

// A sweep id holds its time to the second and then random hex: sweeps
// made within one second list in the order they were made, not by their
// hex, and a database of a build without the sweeps' index (or written to
// by one since) gets it at open.
func TestSweepsListInTheOrderTheyWereMade(t *testing.T) {
	path := filepath.Join(t.TempDir(), "vlmfleet.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	var want []string
	for i, hex := range []string{"ffff", "8888", "0000", "4444"} {
		sw := protocol.Sweep{ID: "sw-20261101-000000-" + hex, Workload: testWorkload(), CreatedAt: at.Add(time.Duration(i) * time.Millisecond)}
		if err := s.CreateSweep(sw, nil); err != nil {
			t.Fatal(err)
		}
		want = append(want, sw.ID)
	}
	rev := slices.Clone(want)
	slices.Reverse(rev)
	check := func(when string) {
		t.Helper()
		if got := sweepIDs(t, s, 3, false); !slices.Equal(got, want) {
			t.Fatalf("%s: oldest first %v, want %v", when, got, want)
		}
		if got := sweepIDs(t, s, 3, true); !slices.Equal(got, rev) {
			t.Fatalf("%s: newest first %v, want %v", when, got, rev)
		}
	}
	check("as made")
	reopen := func(change func(tx *bolt.Tx) error) {
		t.Helper()
		if err := s.db.Update(change); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if s, err = Open(path, Options{}); err != nil {
			t.Fatal(err)
		}
	}
	// A file from before the index.
	reopen(func(tx *bolt.Tx) error { return tx.DeleteBucket(bucketSweepsByTime) })
	check("index missing at open")
	// An older build added a sweep without indexing it.
	reopen(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketSweepsByTime).Cursor()
		k, _ := c.Last()
		return tx.Bucket(bucketSweepsByTime).Delete(k)
	})
	check("index short of a sweep at open")
	_ = s.Close()
}

// A job written on its own (PutJob) that names a stored sweep is one of
// that sweep's jobs, as a scan of every job would have found.
func TestPutJobJoinsItsSweep(t *testing.T) {
	s := openTest(t)
	ids := makeSweep(t, s, "sw-20261101-000000-aaaa", []string{"a1"}, 2)
	lone := JobRecord{Job: protocol.Job{ID: "orphan-1", SweepID: "sw-20261101-000000-aaaa", AgentID: "a1", Deployment: "d", Workload: testWorkload()}, State: protocol.JobQueued}
	for range 2 { // twice: listed once
		if err := s.PutJob(lone); err != nil {
			t.Fatal(err)
		}
	}
	jobs, err := s.Jobs(context.Background(), JobQuery{SweepID: "sw-20261101-000000-aaaa"})
	if err != nil || len(jobs) != 3 {
		t.Fatalf("the sweep's jobs: %d, %v; want its 2 and orphan-1", len(jobs), err)
	}
	sw, err := s.Sweep("sw-20261101-000000-aaaa")
	if err != nil || !slices.Equal(sw.Jobs, append(ids, "orphan-1")) {
		t.Fatalf("the sweep lists %v, %v", sw.Jobs, err)
	}
}

// A filter skips records without its field's bytes before decoding them:
// a value that encoding/json escapes (<, &, ", non-ASCII) is looked for as
// it is stored, and bytes that stand elsewhere in a record (a job's
// history holds states too) are no match.
func TestFiltersFindEscapedValues(t *testing.T) {
	s := openTest(t)
	odd := "a<b&c\"é"
	err := s.db.Update(func(tx *bolt.Tx) error {
		r := testRun("r-odd", odd)
		r.SweepID = odd
		return putJSON(tx.Bucket(bucketRuns), r.ID, &runRecord{Run: r})
	})
	if err != nil {
		t.Fatal(err)
	}
	importRuns(t, s, "r-plain")
	for _, q := range []RunQuery{{AgentID: odd}, {SweepID: odd}, {AgentID: odd, Status: protocol.RunRunning, Source: protocol.SourceLab}} {
		if got := walk(t, 10, false, runIDs(s, q), nil); !slices.Equal(got, []string{"r-odd"}) {
			t.Errorf("%+v: %v, want r-odd", q, got)
		}
	}
	makeSweep(t, s, "sw-20261101-000000-aaaa", []string{"a1"}, 2) // j1 queued, j2 completed
	_, _, err = s.ApplyJobState(protocol.JobStateChange{JobID: "sw-20261101-000000-aaaa-j1", AgentID: "a1", State: protocol.JobAccepted, Attempt: 1}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.FailJob(protocol.JobStateChange{JobID: "sw-20261101-000000-aaaa-j1", AgentID: "a1", Attempt: 1, Error: "test"}, time.Now()); err != nil {
		t.Fatal(err)
	}
	// j1 is failed now, its history still holds "state":"accepted".
	if got := walk(t, 10, false, jobIDs(s, JobQuery{State: protocol.JobAccepted}), nil); len(got) != 0 {
		t.Errorf("accepted jobs: %v, want none", got)
	}
	if got := walk(t, 10, false, jobIDs(s, JobQuery{State: protocol.JobFailed}), nil); !slices.Equal(got, []string{"sw-20261101-000000-aaaa-j1"}) {
		t.Errorf("failed jobs: %v, want j1", got)
	}
}

// firstState's premise: no field of a job document (protocol.Job, at any
// depth) is named "state", so the first one in a stored job is the job's.
func TestFirstStateIsTheJobsOwn(t *testing.T) {
	seen := map[reflect.Type]bool{}
	var walkType func(path string, ty reflect.Type)
	walkType = func(path string, ty reflect.Type) {
		for ty.Kind() == reflect.Pointer || ty.Kind() == reflect.Slice || ty.Kind() == reflect.Array || ty.Kind() == reflect.Map {
			ty = ty.Elem()
		}
		if ty.Kind() != reflect.Struct || seen[ty] {
			return
		}
		seen[ty] = true
		for i := range ty.NumField() {
			f := ty.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" {
				name = f.Name
			}
			if strings.EqualFold(name, "state") {
				t.Errorf("%s.%s is a field named state: firstState would read it as the job's", path, f.Name)
			}
			walkType(path+"."+f.Name, f.Type)
		}
	}
	walkType("Job", reflect.TypeOf(protocol.Job{}))
	rec := JobRecord{Job: protocol.Job{ID: "j", Workload: testWorkload()}, State: protocol.JobFailed,
		History: []JobHistoryEntry{{State: protocol.JobAccepted, Attempt: 1}}}
	rec.Job.Workload.Prompt = `say "state":"queued"`
	v, err := json.Marshal(&rec)
	if err != nil {
		t.Fatal(err)
	}
	if st, ok := firstState(v); !ok || st != protocol.JobFailed {
		t.Fatalf("firstState of %s: %q %v, want failed", v, st, ok)
	}
}

// An import that replaces a run under its id says so (RunsReplaced); a
// new run does not, nor a failed import.
func TestRunsReplacedMovesOnlyWhenAnImportReplacesARun(t *testing.T) {
	s := openTest(t)
	importRuns(t, s, "r1")
	if n := s.RunsReplaced(); n != 0 {
		t.Fatalf("a first import: RunsReplaced %d, want 0", n)
	}
	importRuns(t, s, "r2")
	if n := s.RunsReplaced(); n != 0 {
		t.Fatalf("a new run: RunsReplaced %d, want 0", n)
	}
	bad := testRun("r1", "a1")
	bad.Config.Model = ""
	if _, err := s.ImportRuns([]ImportEntry{{Origin: "test", Run: testRun("r2", "a1")}, {Origin: "test", Run: bad}}); err == nil {
		t.Fatal("an import with an invalid run was taken")
	}
	if n := s.RunsReplaced(); n != 0 {
		t.Fatalf("a rolled-back import: RunsReplaced %d, want 0", n)
	}
	importRuns(t, s, "r1")
	if n := s.RunsReplaced(); n != 1 {
		t.Fatalf("r1 imported again: RunsReplaced %d, want 1", n)
	}
}
