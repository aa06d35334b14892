package controller

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/controller/jobs"
	"github.com/vlmfleet/vlmfleet/controller/store"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// listAll walks a list endpoint over HTTP by its Link rel="next" headers
// and returns the id of every item and how many pages it took.
func listAll(t *testing.T, c *Controller, path string) (ids []string, pages int) {
	t.Helper()
	seen := map[string]bool{}
	for next := path; next != ""; pages++ {
		code, body, link := fetchPage(t, c, next)
		if code != http.StatusOK {
			t.Fatalf("GET %s: %d %s", next, code, body)
		}
		var items []struct {
			ID  string `json:"id"`
			Seq uint64 `json:"seq"`
		}
		if err := json.Unmarshal(body, &items); err != nil {
			t.Fatalf("GET %s: %v in %.200s", next, err, body)
		}
		for _, it := range items {
			id := it.ID
			if id == "" {
				id = fmt.Sprint(it.Seq)
			}
			if seen[id] {
				t.Fatalf("GET %s: %s again", next, id)
			}
			seen[id] = true
			ids = append(ids, id)
		}
		if pages > 100 {
			t.Fatalf("GET %s: the pages never end", path)
		}
		next = link
	}
	return ids, pages
}

// Every list endpoint answered the whole list in one answer: with a large
// store, GET /api/runs was 180 MB and 11 s (docs/benchmarks.md). Each now
// answers a page of at most 100 by default, and a Link rel="next" header
// leads through the rest.
func TestListsComeInPages(t *testing.T) {
	c := startController(t, t.TempDir())
	at := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	var sweepIDs, jobIDs []string
	for i := range 101 {
		sw := protocol.Sweep{ID: jobs.NewID("sw", at.Add(time.Duration(i)*time.Minute)), Workload: testWorkload(), CreatedAt: at}
		var recs []store.JobRecord
		n := 1
		if i == 0 {
			n = 150
		}
		for k := range n {
			id := fmt.Sprintf("%s-j%d", sw.ID, k+1)
			sw.Jobs = append(sw.Jobs, id)
			recs = append(recs, store.JobRecord{Job: protocol.Job{ID: id, SweepID: sw.ID, AgentID: "a1", Deployment: "d1", Workload: sw.Workload, CreatedAt: at}, State: protocol.JobQueued})
		}
		if err := c.store.CreateSweep(sw, recs); err != nil {
			t.Fatal(err)
		}
		sweepIDs = append(sweepIDs, sw.ID)
		jobIDs = append(jobIDs, sw.Jobs...)
	}
	var entries []store.ImportEntry
	var runIDs []string
	for i := range 150 {
		r := testRun(fmt.Sprintf("run-%03d", i), "a1")
		r.JobID, r.Status, r.FinishedAt = "", protocol.RunCompleted, r.CreatedAt
		entries = append(entries, store.ImportEntry{Origin: "test", Run: r})
		runIDs = append(runIDs, r.ID)
	}
	if _, err := c.store.ImportRuns(entries); err != nil {
		t.Fatal(err)
	}
	var rejected []string
	for range 120 {
		if err := c.store.Reject(store.Rejection{Reason: "test"}, []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	for i := 120; i >= 1; i-- {
		rejected = append(rejected, fmt.Sprint(i))
	}
	slices.Sort(jobIDs)
	for _, tc := range []struct {
		path  string
		want  []string
		pages int
	}{
		{"/api/runs", runIDs, 2},
		{"/api/jobs", jobIDs, 3},
		{"/api/jobs?sweep=" + sweepIDs[0] + "&limit=40", jobIDs[:150], 4},
		{"/api/sweeps", sweepIDs, 2},
		{"/api/rejected", rejected, 2},
		{"/api/runs?limit=1000", runIDs, 1},
	} {
		code, body, link := fetchPage(t, c, tc.path)
		var first []json.RawMessage
		if code != http.StatusOK || json.Unmarshal(body, &first) != nil {
			t.Fatalf("GET %s: %d %.200s", tc.path, code, body)
		}
		if len(tc.want) > api.DefaultListLimit && !strings.Contains(tc.path, "limit=") && (len(first) != 100 || link == "") {
			t.Errorf("GET %s: %d items, next %q; want the first 100 and a next page", tc.path, len(first), link)
		}
		got, pages := listAll(t, c, tc.path)
		if !slices.Equal(got, tc.want) || pages != tc.pages {
			t.Errorf("GET %s and its next pages: %d items in %d pages, want %d in %d", tc.path, len(got), pages, len(tc.want), tc.pages)
		}
	}
	// The next page keeps the request's filters and limit.
	_, _, link := fetchPage(t, c, "/api/jobs?sweep="+sweepIDs[0]+"&limit=40")
	u, err := url.Parse(link)
	if err != nil || u.Path != "/api/jobs" || u.Query().Get("sweep") != sweepIDs[0] || u.Query().Get("limit") != "40" || u.Query().Get("cursor") == "" {
		t.Errorf("next page %q: want /api/jobs with the sweep, the limit and a cursor", link)
	}
	// Newest first walks the same jobs backwards.
	got, _ := listAll(t, c, "/api/jobs?order=newest&limit=1000")
	rev := slices.Clone(jobIDs)
	slices.Reverse(rev)
	if !slices.Equal(got, rev) {
		t.Errorf("GET /api/jobs?order=newest: %d jobs, not the list backwards", len(got))
	}
}

// A request for a page the API cannot give is a 400 that names the
// parameter and what it takes; nothing is answered in its place.
func TestListParametersAreChecked(t *testing.T) {
	c := startController(t, t.TempDir())
	for range 3 {
		if err := c.store.Reject(store.Rejection{Reason: "test"}, []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	_, _, rejLink := fetchPage(t, c, "/api/rejected?limit=1")
	u, err := url.Parse(rejLink)
	if err != nil || u.Query().Get("cursor") == "" {
		t.Fatalf("no next page after one rejection of three: %q", rejLink)
	}
	rejCursor := u.Query().Get("cursor")
	for _, tc := range []struct{ path, says string }{
		{"/api/runs?limit=0", `limit "0": want a whole number from 1 to 1000 (default 100)`},
		{"/api/jobs?limit=1001", `limit "1001": want a whole number from 1 to 1000`},
		{"/api/sweeps?limit=ten", `limit "ten": want a whole number from 1 to 1000`},
		{"/api/rejected?limit=0", `limit "0": want a whole number from 1 to 1000`},
		{"/api/runs?order=sideways", `order "sideways": want oldest or newest`},
		{"/api/runs?cursor=%21%21", "cursor: not a cursor of this list"},
		{"/api/runs?cursor=", "cursor: not a cursor of this list"},
		{"/api/runs?cursor=" + rejCursor, "cursor: not a cursor of this list"},
		{"/api/rejected?order=oldest&cursor=" + rejCursor, "cursor: it continues a list in the other order"},
	} {
		code, body, _ := fetchPage(t, c, tc.path)
		var answer struct{ Error string }
		if err := json.Unmarshal(body, &answer); err != nil || code != http.StatusBadRequest || !strings.Contains(answer.Error, tc.says) {
			t.Errorf("GET %s: %d %s, want 400 saying %q", tc.path, code, body, tc.says)
		}
	}
	if got, _ := listAll(t, c, "/api/rejected?limit=1&cursor="+rejCursor); !slices.Equal(got, []string{"2", "1"}) {
		t.Errorf("the rejections after the cursor: %v, want 2 1", got)
	}
}
