package explorer

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// storeRuns stands in for the controller's store: runs with their
// per-request records, by id.
type storeRuns []protocol.Run

func (s storeRuns) Runs(context.Context) ([]protocol.Run, error) { return s, nil }

func (s storeRuns) LoadRun(_ context.Context, id string) (protocol.Run, bool, error) {
	for _, r := range s {
		if r.ID == id {
			return r, true, nil
		}
	}
	return protocol.Run{}, false, nil
}

// comparedRuns: one configuration measured three times (the last slower at
// 720p than the one before), and the same model at another quantization.
func comparedRuns() storeRuns {
	ks := keys(3)
	first := synthRun("first", 1, 16, ks, steady)
	second := synthRun("second", 2, 16, ks, steady)
	third := synthRun("third", 3, 16, ks, func(k protocol.ComboKey) profile {
		p := steady(k)
		if k.Size == "720p" {
			p.ttft *= 1.5
		}
		return p
	})
	q4 := synthRun("q4", 4, 16, ks, steady)
	q4.Config.Quantization = "Q4_K_M"
	return storeRuns{first, second, third, q4}
}

func TestCompareEndpoint(t *testing.T) {
	srv := serve(t, comparedRuns())
	var c Comparison
	if st, body := get(t, srv, "GET", PathCompare+"?a=second&b=third", &c); st != http.StatusOK {
		t.Fatalf("status %d: %s", st, body)
	}
	if c.Verdict != VerdictWorse || c.A.ID != "second" || c.B.ID != "third" || len(c.Combos) != 3 || c.Rule == "" {
		t.Fatalf("comparison %+v", c)
	}
	for _, tc := range []struct {
		query, want string
		status      int
	}{
		{"?a=second", "want ?a=RUN&b=RUN", http.StatusBadRequest},
		{"?a=second&b=nosuch", `no run "nosuch"`, http.StatusNotFound},
		{"?a=second&b=q4", `quantization "Q8_0" vs "Q4_K_M"`, http.StatusConflict},
	} {
		var e compareError
		st, body := get(t, srv, "GET", PathCompare+tc.query, nil)
		if err := json.Unmarshal([]byte(body), &e); err != nil {
			t.Fatalf("%s: %v: %s", tc.query, err, body)
		}
		if st != tc.status || !strings.Contains(e.Error, tc.want) {
			t.Errorf("%s: %d %s, want %d with %q", tc.query, st, body, tc.status, tc.want)
		}
		if tc.status == http.StatusConflict && (len(e.Differences) != 1 || e.Differences[0].Field != "quantization") {
			t.Errorf("%s: differences %+v, want the quantization", tc.query, e.Differences)
		}
	}
}

func TestCompareEndpointWithoutRecords(t *testing.T) {
	srv := serve(t, runList{runs: comparedRuns()})
	if st, body := get(t, srv, "GET", PathCompare+"?a=second&b=third", nil); st != http.StatusNotImplemented || !strings.Contains(body, "compare on a controller") {
		t.Fatalf("%d %s, want 501 saying where to compare", st, body)
	}
}

// The row of a configuration whose latest run got worse than the one before
// carries the marker, linking the compare page; the other row does not.
func TestDatasetFlagsRegression(t *testing.T) {
	runs := comparedRuns()
	srv := serve(t, runs)
	var ds Dataset
	if st, body := get(t, srv, "GET", PathData, &ds); st != http.StatusOK {
		t.Fatalf("status %d: %s", st, body)
	}
	if len(ds.Rows) != 2 {
		t.Fatalf("%d rows, want 2", len(ds.Rows))
	}
	for _, row := range ds.Rows {
		switch row.Quantization {
		case "Q8_0":
			want := Regression{Than: "second", Date: runs[1].FinishedAt, Compare: "/compare?a=second&b=third"}
			if row.Regression == nil || row.Regression.Than != want.Than || !row.Regression.Date.Equal(want.Date) || row.Regression.Compare != want.Compare || row.Regression.Worse == 0 {
				t.Errorf("Q8_0 row: regression %+v, want %+v with worse > 0", row.Regression, want)
			}
		default:
			if row.Regression != nil {
				t.Errorf("%s row has one run only, but a regression %+v", row.Quantization, row.Regression)
			}
		}
	}

	// The same runs in the other order: the latest is the faster, no marker.
	runs[2].FinishedAt, runs[1].FinishedAt = runs[1].FinishedAt, runs[2].FinishedAt.Add(time.Hour)
	srv = serve(t, runs)
	ds = Dataset{}
	get(t, srv, "GET", PathData, &ds)
	for _, row := range ds.Rows {
		if row.Regression != nil {
			t.Errorf("%s row: regression %+v, but the latest run is the faster", row.Quantization, row.Regression)
		}
	}
}

// The exported file works offline, where the compare page a marker links
// does not exist: the export carries no marker.
func TestExportLeavesOutRegressionMarkers(t *testing.T) {
	srv := serve(t, comparedRuns())
	var ds Dataset
	get(t, srv, "GET", PathData, &ds)
	flagged := 0
	for _, r := range ds.Rows {
		if r.Regression != nil {
			flagged++
		}
	}
	if flagged == 0 {
		t.Fatal("no row is flagged; the test checks nothing")
	}
	var buf strings.Builder
	if err := Export(&buf, ds); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), `"regression"`) || strings.Contains(buf.String(), "/compare?") {
		t.Error("the exported file carries a regression marker linking the compare page")
	}
	if !strings.Contains(buf.String(), "Qwen3-VL-4B-Instruct") {
		t.Error("the exported file lacks the rows")
	}
	for _, r := range ds.Rows {
		if r.Regression != nil {
			flagged--
		}
	}
	if flagged != 0 {
		t.Error("Export changed the caller's dataset")
	}
}
