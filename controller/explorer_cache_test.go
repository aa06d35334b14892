package controller

import (
	"net/http"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/controller/store"
	"github.com/vlmfleet/vlmfleet/explorer"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// The explorer keeps its aggregate between requests, and a result that
// arrives through ingest shows at the next request: a stale explorer after
// new results would be a defect.
func TestExplorerShowsAResultThatArrivesAfterItsCache(t *testing.T) {
	c := startControllerWith(t, Options{DataDir: t.TempDir(),
		Explorer: func(runs RunSource) http.Handler { return explorer.NewHandler(runs, zerolog.Nop()) }})
	ev, a := announced(t, c, "orin-1", "qwen-q8")
	rows := func() explorer.RowsResponse {
		t.Helper()
		var res explorer.RowsResponse
		if code := getJSON(t, c.HTTPURL()+explorer.PathRows+"?size=480p", &res); code != http.StatusOK {
			t.Fatalf("GET %s: %d", explorer.PathRows, code)
		}
		return res
	}
	// runJob measures one combination of a new sweep's job under model and
	// closes its run completed.
	results := 0
	runJob := func(model string) {
		sw := submit(t, c, protocol.Sweep{Agents: []string{"orin-1"}, Workload: testWorkload()})
		a.state(t, sw.Jobs[0], protocol.JobAccepted, 1, true)
		run := testRun(store.RunIDFor(sw.Jobs[0], 1), "orin-1")
		run.JobID, run.SweepID, run.Config.Model = sw.Jobs[0], sw.ID, model
		a.publish(t, protocol.KindResult, protocol.ResultMessage{Schema: 1, AgentID: "orin-1", Run: run, Combination: testCombo("480p", 1)}, protocol.ResultMsgID(run.ID, "480p-1img-1cam"))
		final := run
		final.Status, final.FinishedAt = protocol.RunCompleted, time.Now().UTC()
		a.publish(t, protocol.KindResult, protocol.ResultMessage{Schema: 1, AgentID: "orin-1", Run: final, Final: true, Expected: 1}, protocol.ResultMsgID(run.ID, "final"))
		results += 2
		ev.waitFor(t, results, kindIs(api.EventResult))
	}

	if got := rows(); got.Total != 0 {
		t.Fatalf("an empty store shows %d rows", got.Total)
	}
	runJob("Qwen3-VL-4B-Instruct")
	first := rows()
	if first.Total != 1 || first.Rows[0].Model != "Qwen3-VL-4B-Instruct" {
		t.Fatalf("after the first run: %+v", first)
	}
	if again := rows(); again.Total != 1 {
		t.Fatalf("asked again: %d rows", again.Total)
	}
	runJob("Qwen3-VL-8B-Instruct")
	second := rows()
	if second.Total != 2 {
		t.Fatalf("after a second run arrived: %d rows, want 2: the explorer answered from a stale aggregate", second.Total)
	}
	var ds explorer.Dataset
	if code := getJSON(t, c.HTTPURL()+explorer.PathData, &ds); code != http.StatusOK || len(ds.Rows) != 2 {
		t.Fatalf("GET %s: %d, %d rows; want 2", explorer.PathData, code, len(ds.Rows))
	}
}
