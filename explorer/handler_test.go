package explorer

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/vlmfleet/vlmfleet/explorer/web"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// runList stands in for the controller's store.
type runList struct {
	runs []protocol.Run
	err  error
}

func (l runList) Runs(ctx context.Context) ([]protocol.Run, error) { return l.runs, l.err }

// handlerRuns: a Jetson AGX Orin row measured at 1, 2, 4 and 8 cameras
// (2 at 1 s, 8+ at 3 s), a simulated row measured at one camera only, and an
// RTX row measured at 720p only with 1, 8 (every request failed) and 16 cameras.
func handlerRuns() []protocol.Run {
	edge := testRun("edge", 0, protocol.RunCompleted, 0.51)
	edge.Config = protocol.Configuration{Model: "Cosmos3-Edge", ParamsB: 3.9, Quantization: "BF16", Engine: "vLLM", Device: "Jetson AGX Orin"}
	edge.Combinations = []protocol.Combination{
		combo("720p", 1, 1, 0.51, 8, 0), combo("720p", 1, 2, 0.93, 8, 0), combo("720p", 1, 4, 1.6, 8, 0), combo("720p", 1, 8, 2.7, 8, 0),
		combo("720p", 5, 1, 2.11, 5, 0), combo("2K", 1, 1, 2.71, 5, 0),
	}
	sim := testRun("sim", 0, protocol.RunCompleted, 4.2)
	sim.Simulated = true
	sim.Combinations = []protocol.Combination{combo("720p", 1, 1, 4.2, 8, 0), combo("1080p", 1, 1, 6, 8, 0)}
	rtx := testRun("rtx", 0, protocol.RunCompleted, 0.16)
	rtx.Config = protocol.Configuration{Model: "Qwen3-VL-4B-Instruct", ParamsB: 4.4, Quantization: "BF16", Engine: "vLLM", Device: "RTX PRO 6000"}
	rtx.Combinations = []protocol.Combination{combo("720p", 1, 1, 0.16, 24, 0), combo("720p", 1, 8, 0, 0, 24), combo("720p", 1, 16, 3.2, 24, 0)}
	return []protocol.Run{edge, sim, rtx}
}

func serve(t *testing.T, src RunSource) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(NewHandler(src, zerolog.New(io.Discard)))
	t.Cleanup(srv.Close)
	return srv
}

func get(t *testing.T, srv *httptest.Server, method, path string, into any) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if into != nil && resp.StatusCode == http.StatusOK {
		if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s: content type %q", path, ct)
		}
		if err := json.Unmarshal(body, into); err != nil {
			t.Fatalf("%s: %v: %s", path, err, body)
		}
	}
	return resp.StatusCode, string(body)
}

func TestHandlerData(t *testing.T) {
	srv := serve(t, runList{runs: handlerRuns()})
	var ds Dataset
	if code, body := get(t, srv, "GET", PathData, &ds); code != http.StatusOK {
		t.Fatalf("status %d: %s", code, body)
	}
	if len(ds.Rows) != 3 || ds.SimulatedRows != 1 || ds.Schema != SchemaVersion {
		t.Fatalf("dataset: %d rows, %d simulated", len(ds.Rows), ds.SimulatedRows)
	}
	for _, r := range ds.Rows {
		if len(r.Explanation) == 0 || len(r.Points) == 0 || r.ID == "" {
			t.Errorf("row %s: %+v", r.Model, r)
		}
	}
}

func rowsByModel(resp RowsResponse) map[string]RowView {
	out := map[string]RowView{}
	for _, r := range resp.Rows {
		out[r.Model] = r
	}
	return out
}

func TestHandlerRows(t *testing.T) {
	srv := serve(t, runList{runs: handlerRuns()})

	var def RowsResponse
	if code, body := get(t, srv, "GET", PathRows, &def); code != http.StatusOK {
		t.Fatalf("status %d: %s", code, body)
	}
	if def.Query != DefaultQuery() || len(def.Rows) != 3 {
		t.Fatalf("defaults %+v with %d rows", def.Query, len(def.Rows))
	}
	rows := rowsByModel(def)
	edge := rows["Cosmos3-Edge"]
	if edge.TTFT == nil || *edge.TTFT != 0.51 || edge.MaxCameras != 8 || !edge.Plus || edge.MaxCamerasLabel != "8+" || !edge.Pass || len(edge.Explanation) != 3 {
		t.Errorf("Cosmos3-Edge at the defaults: %+v", edge)
	}
	sim := rows["Qwen3-VL-8B-Instruct"]
	if !sim.Simulated || sim.Pass || sim.MaxCameras != 0 || sim.MaxCamerasLabel != "0" {
		t.Errorf("simulated row at the defaults: %+v", sim)
	}

	// The target moves Max Cameras; the cameras selector picks the figures
	// and hides rows not measured there.
	var at1 RowsResponse
	get(t, srv, "GET", PathRows+"?size=720p&cameras=2&images=1&target=1", &at1)
	if len(at1.Rows) != 1 {
		t.Fatalf("2 cameras: %d rows, want only Cosmos3-Edge", len(at1.Rows))
	}
	if r := at1.Rows[0]; r.TTFT == nil || *r.TTFT != 0.93 || r.MaxCameras != 2 || r.Plus || r.MaxCamerasLabel != "2" || !r.Pass {
		t.Errorf("Cosmos3-Edge at 2 cameras, 1 s: %+v", r)
	}
	var sixteen RowsResponse
	get(t, srv, "GET", PathRows+"?cameras=16&target=3", &sixteen)
	if len(sixteen.Rows) != 1 || sixteen.Rows[0].Pass || sixteen.Rows[0].MaxCameras != 1 || sixteen.Rows[0].Plus {
		t.Errorf("16 cameras at 3 s: %+v, want the RTX row failing with Max Cameras 1", sixteen.Rows)
	}
	// A level where every request failed is shown, without figures, and fails.
	code, body := get(t, srv, "GET", PathRows+"?cameras=8", nil)
	var eight RowsResponse
	if err := json.Unmarshal([]byte(body), &eight); code != http.StatusOK || err != nil || len(eight.Rows) != 2 {
		t.Fatalf("8 cameras: %d %v %s", code, err, body)
	}
	if r := rowsByModel(eight)["Qwen3-VL-4B-Instruct"]; r.TTFT != nil || r.TPS != nil || r.Pass || r.Failed != 24 || r.MaxCamerasLabel != "1" {
		t.Errorf("8 cameras, all failed: %+v", r)
	}
	if !strings.Contains(body, `"ttft":null`) {
		t.Errorf("no null ttft in %s", body)
	}
	// Several images: one camera only, Max Cameras at most 1; "2k" is read as 2K.
	var five RowsResponse
	get(t, srv, "GET", PathRows+"?images=5&target=2.11", &five)
	var fiveMeasured []RowView
	for _, r := range five.Rows {
		if r.Measured {
			fiveMeasured = append(fiveMeasured, r)
		} else if r.Pass || r.TTFT != nil || r.MaxCameras != 0 {
			t.Errorf("a row not measured with 5 images has figures: %+v", r)
		}
	}
	if len(fiveMeasured) != 1 || fiveMeasured[0].MaxCamerasLabel != "1+" || !fiveMeasured[0].Pass {
		t.Errorf("5 images exactly on a 2.11 s target: %+v", five.Rows)
	}
	var big RowsResponse
	get(t, srv, "GET", PathRows+"?size=2k", &big)
	if big.Size != "2K" || len(big.Rows) != 1 || *big.Rows[0].TTFT != 2.71 {
		t.Errorf("2K: %+v", big)
	}
}

func TestHandlerRowsBadParameters(t *testing.T) {
	srv := serve(t, runList{runs: handlerRuns()})
	for query, want := range map[string][]string{
		"size=4K":               {"size", "480p, 720p, 1080p, 2K"},
		"cameras=0":             {"cameras", "1..1024"},
		"cameras=two":           {"cameras", "whole number"},
		"images=1.5":            {"images", "whole number"},
		"images=65":             {"images", "1..64"},
		"target=-1":             {"target", "above 0"},
		"target=NaN":            {"target", "above 0"},
		"target=soon":           {"target", "number of seconds"},
		"target=1e9":            {"target", "at most 3600"},
		"cameras=1&cameras=2":   {"cameras", "once"},
		"camera=1":              {`"camera"`, "size", "cameras", "images", "target"},
		"size=720p&sizes=1080p": {`"sizes"`},
	} {
		code, body := get(t, srv, "GET", PathRows+"?"+query, nil)
		var e errorBody
		if err := json.Unmarshal([]byte(body), &e); code != http.StatusBadRequest || err != nil {
			t.Errorf("%s: status %d, body %s", query, code, body)
			continue
		}
		for _, w := range want {
			if !strings.Contains(e.Error, w) {
				t.Errorf("%s: error %q does not mention %q", query, e.Error, w)
			}
		}
	}
}

func TestHandlerErrorsAndDelegation(t *testing.T) {
	srv := serve(t, runList{err: errors.New("store closed")})
	for _, path := range []string{PathData, PathRows} {
		code, body := get(t, srv, "GET", path, nil)
		if code != http.StatusInternalServerError || !strings.Contains(body, "store closed") {
			t.Errorf("%s with a failing store: %d %s", path, code, body)
		}
	}
	srv = serve(t, runList{runs: handlerRuns()})
	if code, _ := get(t, srv, "POST", PathData, nil); code != http.StatusMethodNotAllowed {
		t.Errorf("POST %s: %d, want 405", PathData, code)
	}
	if code, body := get(t, srv, "GET", "/api/explorer/nothing", nil); code != http.StatusNotFound || !strings.Contains(body, PathRows) {
		t.Errorf("unknown API path: %d %s", code, body)
	}
	if code, _ := get(t, srv, "HEAD", PathData, nil); code != http.StatusOK {
		t.Errorf("HEAD %s: %d", PathData, code)
	}
	// Everything else is the page's: the same answer as web.Handler gives
	// (the page itself carries its first rows: firstrows_test.go).
	for _, path := range []string{"/static/app.js", "/favicon.ico"} {
		rec := httptest.NewRecorder()
		web.Handler().ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		code, body := get(t, srv, "GET", path, nil)
		if code != rec.Code || body != rec.Body.String() {
			t.Errorf("%s: %d (%d bytes), web.Handler gives %d (%d bytes)", path, code, len(body), rec.Code, rec.Body.Len())
		}
	}
}

func FuzzParseQuery(f *testing.F) {
	for _, s := range []string{"", "size=720p&cameras=1&images=1&target=3", "size=2k&target=0.5", "cameras=99999999999999999999", "target=Inf", "target=0x1p3", "%zz", "size=%00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		v, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		q, err := ParseQuery(v)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		again := q
		if err := again.Normalize(); err != nil || again != q {
			t.Fatalf("accepted %+v, which does not normalize to itself: %v", q, err)
		}
		// What a client sends for q (Values) reads back as q.
		if back, err := ParseQuery(q.Values()); err != nil || back != q {
			t.Fatalf("%+v sent as %q reads back as %+v, %v", q, q.Values().Encode(), back, err)
		}
	})
}

// BenchmarkHandlerData measures GET /api/explorer/data with 1,000 rows (two
// runs each): aggregation and encoding, what the page waits for on load.
func BenchmarkHandlerData(b *testing.B) {
	h := NewHandler(runList{runs: benchRuns()}, zerolog.New(io.Discard))
	var size int
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", PathData, nil))
		if rec.Code != http.StatusOK {
			b.Fatalf("status %d", rec.Code)
		}
		size = rec.Body.Len()
	}
	b.ReportMetric(float64(size), "bytes/response")
}

// BenchmarkHandlerRows measures GET /api/explorer/rows with 1,000 rows.
func BenchmarkHandlerRows(b *testing.B) {
	h := NewHandler(runList{runs: benchRuns()}, zerolog.New(io.Discard))
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", PathRows+"?size=720p&cameras=4&target=2", nil))
		if rec.Code != http.StatusOK {
			b.Fatalf("status %d", rec.Code)
		}
	}
}
