package explorer

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// genSource is a store in miniature: its runs, a generation that moves
// when they change, and a count of the reads of every run.
type genSource struct {
	mu    sync.Mutex
	runs  []protocol.Run
	gen   atomic.Uint64
	reads atomic.Int32
	// gate, when set, holds each read until it is closed.
	gate chan struct{}
}

func (s *genSource) Runs(ctx context.Context) ([]protocol.Run, error) {
	s.reads.Add(1)
	if s.gate != nil {
		select {
		case <-s.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]protocol.Run(nil), s.runs...), nil
}

func (s *genSource) RunsGeneration() uint64 { return s.gen.Load() }

// add stores a run and moves the generation, as a committed result does.
func (s *genSource) add(r protocol.Run) {
	s.mu.Lock()
	s.runs = append(s.runs, r)
	s.mu.Unlock()
	s.gen.Add(1)
}

// The aggregate is read once per generation: requests at one generation
// share it, and a new run (the generation moves) shows at the next request.
func TestHandlerKeepsTheAggregateUntilTheRunsChange(t *testing.T) {
	runs := handlerRuns()
	src := &genSource{runs: runs[:2]}
	srv := serve(t, src)
	for range 3 {
		var ds Dataset
		if code, body := get(t, srv, "GET", PathData, &ds); code != http.StatusOK || len(ds.Rows) != 2 {
			t.Fatalf("GET %s: %d, %d rows: %s", PathData, code, len(ds.Rows), body)
		}
		var rows RowsResponse
		if code, body := get(t, srv, "GET", PathRows, &rows); code != http.StatusOK || len(rows.Rows) != 2 {
			t.Fatalf("GET %s: %d, %d rows: %s", PathRows, code, len(rows.Rows), body)
		}
	}
	if n := src.reads.Load(); n != 1 {
		t.Errorf("the runs were read %d times at one generation, want once", n)
	}

	src.add(runs[2])
	var ds Dataset
	get(t, srv, "GET", PathData, &ds)
	var rows RowsResponse
	get(t, srv, "GET", PathRows, &rows)
	if len(ds.Rows) != 3 || len(rows.Rows) != 3 || rows.Total != 3 {
		t.Fatalf("after a new run: data %d rows, rows %d (total %d); want 3: the explorer kept a stale aggregate", len(ds.Rows), len(rows.Rows), rows.Total)
	}
	if _, ok := rowsByModel(rows)["Qwen3-VL-4B-Instruct"]; !ok {
		t.Errorf("the new run's row is missing: %+v", rows.Rows)
	}
	if n := src.reads.Load(); n != 2 {
		t.Errorf("the runs were read %d times over two generations, want twice", n)
	}
}

// Requests that miss the cache together wait for one read of the runs.
func TestHandlerBuildsOnceForConcurrentMisses(t *testing.T) {
	src := &genSource{runs: handlerRuns(), gate: make(chan struct{})}
	var entered atomic.Int32
	h := NewHandler(src, zerolog.Nop())
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered.Add(1)
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	const n = 8
	var wg sync.WaitGroup
	codes := make(chan int, n)
	for range n {
		wg.Go(func() {
			code, _ := get(t, srv, "GET", PathRows, nil)
			codes <- code
		})
	}
	// Every request is in before the first read ends: the first read is
	// held at the gate, so the others can only wait for it or read too.
	waitFor(t, func() bool { return entered.Load() == n && src.reads.Load() >= 1 })
	close(src.gate)
	wg.Wait()
	close(codes)
	for code := range codes {
		if code != http.StatusOK {
			t.Errorf("status %d", code)
		}
	}
	if got := src.reads.Load(); got != 1 {
		t.Errorf("%d concurrent misses read the runs %d times, want once", n, got)
	}
}

// waitFor polls cond until it holds, failing the test after 10 s; for
// conditions no event announces.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10 s")
		}
		time.Sleep(time.Millisecond)
	}
}

// ?offset= and ?limit= cut a page of the rows, in the table's order, and
// total counts them all; a bad page is refused naming the parameter.
func TestHandlerRowsPages(t *testing.T) {
	srv := serve(t, &genSource{runs: handlerRuns()})
	var all RowsResponse
	get(t, srv, "GET", PathRows, &all)
	if all.Total != 3 || len(all.Rows) != 3 || all.Offset != 0 || all.Limit != 0 {
		t.Fatalf("every row: total %d, %d rows, offset %d, limit %d", all.Total, len(all.Rows), all.Offset, all.Limit)
	}
	for _, c := range []struct {
		query string
		want  []RowView
	}{
		{"limit=1", all.Rows[:1]},
		{"offset=1&limit=1", all.Rows[1:2]},
		{"offset=2&limit=5", all.Rows[2:]},
		{"offset=3", nil},
		{"offset=9&limit=2", nil},
	} {
		var page RowsResponse
		if code, body := get(t, srv, "GET", PathRows+"?"+c.query, &page); code != http.StatusOK {
			t.Fatalf("?%s: %d %s", c.query, code, body)
		}
		if page.Total != 3 || len(page.Rows) != len(c.want) {
			t.Errorf("?%s: total %d, %d rows; want 3, %d", c.query, page.Total, len(page.Rows), len(c.want))
			continue
		}
		for i := range c.want {
			if page.Rows[i].ID != c.want[i].ID {
				t.Errorf("?%s: row %d is %s, want %s", c.query, i, page.Rows[i].Model, c.want[i].Model)
			}
		}
	}
	for query, want := range map[string]string{
		"limit=0":           "limit: \"0\", want a whole number 1..1000",
		"limit=1001":        "limit: \"1001\"",
		"limit=x":           "limit: \"x\"",
		"offset=-1":         "offset: \"-1\", want a whole number 0 or more",
		"offset=1&offset=2": "offset: given 2 times",
		"page=2":            "unknown parameter \"page\"",
		"page=2&limit=1":    "and offset, limit",
		"limit=1&cameras=0": "cameras: 0",
	} {
		code, body := get(t, srv, "GET", PathRows+"?"+query, nil)
		var e errorBody
		_ = json.Unmarshal([]byte(body), &e)
		if code != http.StatusBadRequest || !strings.Contains(e.Error, want) {
			t.Errorf("?%s: %d %s; want 400 naming %q", query, code, body, want)
		}
	}
}

// A large answer goes gzip-compressed to a client that accepts it, and
// as it is to one that does not.
func TestHandlerCompressesLargeAnswers(t *testing.T) {
	var runs []protocol.Run
	for i := range 200 {
		r := testRun(fmt.Sprintf("r%d", i), i, protocol.RunCompleted, 0.5)
		r.Config.Model = fmt.Sprintf("model-%d", i)
		runs = append(runs, r)
	}
	srv := serve(t, &genSource{runs: runs})
	for _, enc := range []string{"gzip", "gzip;q=0", ""} {
		req, _ := http.NewRequest("GET", srv.URL+PathData, nil)
		if enc != "" {
			req.Header.Set("Accept-Encoding", enc)
		}
		// A transport of its own that leaves the body as it came.
		resp, err := (&http.Transport{DisableCompression: true}).RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		gz := resp.Header.Get("Content-Encoding") == "gzip"
		if gz != (enc == "gzip") {
			t.Errorf("Accept-Encoding %q: Content-Encoding %q", enc, resp.Header.Get("Content-Encoding"))
		}
		if gz {
			zr, err := gzip.NewReader(bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			if body, err = io.ReadAll(zr); err != nil {
				t.Fatal(err)
			}
		}
		var ds Dataset
		if err := json.Unmarshal(body, &ds); err != nil || len(ds.Rows) != 200 {
			t.Errorf("Accept-Encoding %q: %d rows, %v", enc, len(ds.Rows), err)
		}
		if !strings.Contains(resp.Header.Get("Vary"), "Accept-Encoding") {
			t.Errorf("Accept-Encoding %q: no Vary: Accept-Encoding", enc)
		}
	}
}

// flakyLoader is a store whose first loads of a run fail, as a read that
// times out does.
type flakyLoader struct {
	*genSource
	runs     storeRuns
	failures atomic.Int32
}

func (f *flakyLoader) LoadRun(ctx context.Context, id string) (protocol.Run, bool, error) {
	if f.failures.Add(-1) >= 0 {
		return protocol.Run{}, false, errors.New("read timed out")
	}
	return f.runs.LoadRun(ctx, id)
}

// A regression marker that could not be computed (a run failed to load)
// is missing from that answer only: the aggregate is not kept without it,
// so the next request at the same generation has it.
func TestHandlerDoesNotKeepAnAggregateMissingAMarker(t *testing.T) {
	runs := comparedRuns()
	src := &flakyLoader{genSource: &genSource{runs: runs}, runs: runs}
	src.failures.Store(1)
	srv := serve(t, src)
	flagged := func() int {
		var ds Dataset
		if code, body := get(t, srv, "GET", PathData, &ds); code != http.StatusOK {
			t.Fatalf("status %d: %s", code, body)
		}
		n := 0
		for _, r := range ds.Rows {
			if r.Regression != nil {
				n++
			}
		}
		return n
	}
	if n := flagged(); n != 0 {
		t.Fatalf("with the load failing, %d rows flagged", n)
	}
	if n := flagged(); n != 1 {
		t.Errorf("the next request at the same generation flags %d rows, want 1: the aggregate was kept without its marker", n)
	}
}

// An answer kept for one view is never served for another: every part of
// the query, the frame clock and the statistic too, is its own answer.
func TestHandlerRowsKeepsAnAnswerPerQuery(t *testing.T) {
	srv := serve(t, &genSource{runs: handlerRuns()})
	var def RowsResponse
	get(t, srv, "GET", PathRows, &def)
	for query, want := range map[string]Query{
		"statistic=p90": {Size: "720p", Cameras: 1, Images: 1, Target: 3, Statistic: protocol.StatisticP90},
		"every=5":       {Size: "720p", Cameras: 1, Images: 1, Target: 3, Interval: 5},
	} {
		var res RowsResponse
		if code, body := get(t, srv, "GET", PathRows+"?"+query, &res); code != http.StatusOK {
			t.Fatalf("?%s: %d %s", query, code, body)
		}
		if res.Query != want {
			t.Errorf("?%s after the default view: answered at %+v, want %+v", query, res.Query, want)
		}
	}
}
