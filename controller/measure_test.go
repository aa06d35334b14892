package controller

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/controller/store"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// labOfSize fills a controller's store with a lab of some size: 10 agents
// of 10 deployments each, 10 sweeps over all of them (1,000 jobs), and 500
// imported runs of 4 combinations with 64 request records each.
func labOfSize(t *testing.T) *Controller {
	t.Helper()
	c := startController(t, t.TempDir())
	var deps []string
	for d := range 10 {
		deps = append(deps, fmt.Sprintf("d%d", d))
	}
	var agents []string
	for i := range 10 {
		id := fmt.Sprintf("a%d", i)
		agents = append(agents, id)
		ev := watchEvents(t, c)
		a := newFakeAgent(t, c, id)
		ev.waitFor(t, 1, helloStored(a.hello(t, deps...)))
	}
	for range 10 {
		if _, err := c.SubmitSweep(waitCtx(t), protocol.Sweep{Agents: agents, Workload: testWorkload()}); err != nil {
			t.Fatal(err)
		}
	}
	var entries []store.ImportEntry
	for i := range 500 {
		r := testRun(fmt.Sprintf("bench-%d", i), "")
		r.Source, r.Status, r.JobID, r.AgentID = protocol.SourceBench, protocol.RunCompleted, "", ""
		r.FinishedAt = r.CreatedAt
		for _, size := range []string{"480p", "720p"} {
			for _, cams := range []int{1, 2} {
				cb := testCombo(size, cams)
				cb.Requests = nil
				for k := range 64 {
					cb.Requests = append(cb.Requests, protocol.RequestRecord{Camera: k % cams, Seq: k / cams, TTFT: 1.3, CompletionTokens: 128, TPS: 28})
				}
				cb.Completed = len(cb.Requests)
				cb.TTFT.N = len(cb.Requests)
				r.Combinations = append(r.Combinations, *cb)
			}
		}
		entries = append(entries, store.ImportEntry{Origin: "bench", Run: r})
	}
	if _, err := c.store.ImportRuns(entries); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestMeasureScrapeAndBackup times scrapes of /metrics and backups over
// HTTP on labOfSize, for docs/benchmarks.md. It runs only when asked:
// VLMFLEET_MEASURE=1 go test -count=1 -v -run TestMeasureScrapeAndBackup ./controller/
func TestMeasureScrapeAndBackup(t *testing.T) {
	if os.Getenv("VLMFLEET_MEASURE") == "" {
		t.Skip("a measurement for docs/benchmarks.md; set VLMFLEET_MEASURE=1 to run it")
	}
	c := labOfSize(t)
	timed := func(path string, n int) (median time.Duration, size int) {
		var ds []time.Duration
		for range n {
			start := time.Now()
			code, sz := fetchSized(t, c, path)
			ds = append(ds, time.Since(start))
			if code != http.StatusOK {
				t.Fatalf("GET %s: %d", path, code)
			}
			size = sz
		}
		slices.Sort(ds)
		return ds[len(ds)/2], size
	}
	scrape, scrapeSize := timed("/metrics", 21)
	backup, backupSize := timed("/api/backup", 5)
	t.Logf("1,000 jobs, 10 agents, 500 runs of 4 combinations x 64 records: /metrics median %s (%d bytes); /api/backup median %s (%.1f MiB)",
		scrape.Round(time.Millisecond/10), scrapeSize, backup.Round(time.Millisecond), float64(backupSize)/(1<<20))
}

// fetchSized GETs path with the API token and returns the status and the size
// of the answer.
func fetchSized(t *testing.T, c *Controller, path string) (int, int) {
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
	var buf bytes.Buffer
	n, _ := io.Copy(&buf, resp.Body)
	return resp.StatusCode, int(n)
}
