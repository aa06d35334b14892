package controller

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/controller/jobs"
	"github.com/vlmfleet/vlmfleet/controller/store"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// Size of largeLab: 500 sweeps of 20 jobs (10,000 jobs) over 20 agents, a
// run for each of the first 4,167 jobs with 24 combinations (100,008
// combinations), and 2,000 rejected messages.
const (
	largeSweeps        = 500
	largeJobsPerSweep  = 20
	largeRuns          = 4167
	largeRejected      = 2000
	largeAgents        = 20
	largeRunsPerImport = 500
)

// largeLab fills a controller's store through the store's own write paths
// (CreateSweep, ImportRuns, Reject) with a lab the size the lists must
// hold up at (docs/scaling.md). It returns a sweep id and an agent id to filter by.
func largeLab(t *testing.T) (c *Controller, sweepID, agentID string) {
	t.Helper()
	c = startController(t, t.TempDir())
	w := protocol.DefaultWorkload()
	w.Sizes = []string{"480p", "720p", "1080p", "2K"}
	w.Cameras = []int{1, 2, 3, 4, 5, 6}
	w.MultiImageSizes, w.ImagesPerRequest, w.MultiImageRequests = nil, nil, 0
	base := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	var stored []store.JobRecord
	for i := range largeSweeps {
		at := base.Add(time.Duration(i) * time.Minute)
		sw := protocol.Sweep{ID: jobs.NewID("sw", at), Workload: w, CreatedAt: at}
		var recs []store.JobRecord
		for k := range largeJobsPerSweep {
			id := fmt.Sprintf("%s-j%d", sw.ID, k+1)
			sw.Jobs = append(sw.Jobs, id)
			recs = append(recs, store.JobRecord{
				Job: protocol.Job{Schema: protocol.SchemaVersion, ID: id, SweepID: sw.ID, AgentID: fmt.Sprintf("agent-%02d", k%largeAgents),
					Deployment: "d1", Workload: w, CreatedAt: at},
				State: protocol.JobCompleted, Attempt: 1, Published: true, UpdatedAt: at,
			})
		}
		if err := c.store.CreateSweep(sw, recs); err != nil {
			t.Fatal(err)
		}
		stored = append(stored, recs...)
	}
	var entries []store.ImportEntry
	flush := func() {
		if len(entries) == 0 {
			return
		}
		if _, err := c.store.ImportRuns(entries); err != nil {
			t.Fatal(err)
		}
		entries = entries[:0]
	}
	for i := range largeRuns {
		j := stored[i].Job
		r := testRun(store.RunIDFor(j.ID, 1), j.AgentID)
		r.JobID, r.SweepID, r.Workload = j.ID, j.SweepID, w
		r.Status, r.CreatedAt = protocol.RunCompleted, j.CreatedAt.Add(time.Second)
		r.FinishedAt = r.CreatedAt.Add(time.Minute)
		for _, size := range w.Sizes {
			for _, cams := range w.Cameras {
				cb := testCombo(size, cams)
				cb.Requests = nil
				r.Combinations = append(r.Combinations, *cb)
			}
		}
		entries = append(entries, store.ImportEntry{Origin: "measure", Run: r})
		if len(entries) == largeRunsPerImport {
			flush()
		}
	}
	flush()
	for i := range largeRejected {
		rej := store.Rejection{Time: base, Subject: "vlmfleet.agent.agent-00.result", Reason: fmt.Sprintf("measure %d", i)}
		if err := c.store.Reject(rej, []byte(`{"not":"valid"}`)); err != nil {
			t.Fatal(err)
		}
	}
	return c, stored[largeRuns/2].Job.SweepID, "agent-07"
}

// TestMeasureLists times every list endpoint over HTTP on largeLab, for
// docs/benchmarks.md: the first page as a client without paging reads it
// (p50, p99, bytes), and a walk of every page by the Link headers. It runs
// only when asked:
// VLMFLEET_MEASURE=1 go test -count=1 -v -timeout 30m -run TestMeasureLists ./controller/
func TestMeasureLists(t *testing.T) {
	if os.Getenv("VLMFLEET_MEASURE") == "" {
		t.Skip("a measurement for docs/benchmarks.md; set VLMFLEET_MEASURE=1 to run it")
	}
	start := time.Now()
	c, sweepID, agentID := largeLab(t)
	t.Logf("store: %d sweeps, %d jobs, %d runs x 24 combinations, %d rejected; filled in %s",
		largeSweeps, largeSweeps*largeJobsPerSweep, largeRuns, largeRejected, time.Since(start).Round(time.Second))
	if fi, err := os.Stat(c.store.Path()); err == nil {
		t.Logf("bbolt file: %.1f MiB", float64(fi.Size())/(1<<20))
	}
	for _, path := range []string{
		"/api/runs", "/api/runs?sweep=" + sweepID, "/api/runs?agent=" + agentID, "/api/runs?status=failed",
		"/api/jobs", "/api/jobs?sweep=" + sweepID, "/api/jobs?agent=" + agentID, "/api/jobs?state=failed", "/api/jobs?active=1",
		"/api/sweeps", "/api/sweeps/" + sweepID, "/api/rejected", "/api/live",
	} {
		var ds []time.Duration
		size := 0
		deadline := time.Now().Add(20 * time.Second)
		for n := 0; n < 51 && (n < 5 || time.Now().Before(deadline)); n++ {
			t0 := time.Now()
			code, body, _ := fetchPage(t, c, path)
			ds = append(ds, time.Since(t0))
			if code != http.StatusOK {
				t.Fatalf("GET %s: %d %s", path, code, body)
			}
			size = len(body)
		}
		slices.Sort(ds)
		p99 := ds[min(len(ds)-1, len(ds)*99/100)]
		// The walk follows rel="next" to the end, as controller/client does.
		t0 := time.Now()
		pages, total := 0, 0
		for next := path; next != ""; pages++ {
			code, body, link := fetchPage(t, c, next)
			if code != http.StatusOK {
				t.Fatalf("GET %s: %d %s", next, code, body)
			}
			total += len(body)
			next = link
		}
		t.Logf("%-60s first page: p50 %8s p99 %8s (n=%2d) %9d bytes; all: %3d pages %10d bytes in %s",
			path, ds[len(ds)/2].Round(time.Millisecond/10), p99.Round(time.Millisecond/10), len(ds), size,
			pages, total, time.Since(t0).Round(time.Millisecond))
	}
}

// fetchPage GETs path with the API token and returns the status, the body,
// and the path of the next page (a Link rel="next" header), "" for none.
func fetchPage(t *testing.T, c *Controller, path string) (int, []byte, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, c.HTTPURL()+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+c.APIToken())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, body, api.NextLink(resp.Header)
}
