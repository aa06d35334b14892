package simlab_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/explorer"
	"github.com/vlmfleet/vlmfleet/harness/simlab"
	"github.com/vlmfleet/vlmfleet/internal/testutil"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// TestLabEndToEnd runs the real parts together: the controller with its
// embedded NATS server and a bbolt file in a temp dir, an agent with the
// simulated engine (a real HTTP server on loopback), a sweep, and the stored
// result read back through the HTTP API. It then redelivers a result message
// and shows that it is stored once.
func TestLabEndToEnd(t *testing.T) {
	l := newLab(t, testContext(t, 90*time.Second), simlab.Options{})
	ctrl := l.Controller()
	const device = "Jetson AGX Orin"
	l.startAgent(agx("it-agx"))

	w := protocol.DefaultWorkload()
	w.Sizes = []string{"720p"}
	w.Cameras = []int{1, 2}
	w.RequestsPerLevel = 2
	w.MultiImageSizes = []string{"720p"}
	w.ImagesPerRequest = []int{1, 3}
	w.MultiImageRequests = 2
	sweep, err := l.Submit(l.ctx, protocol.Sweep{Name: "it", Agents: []string{"it-agx"}, Workload: w})
	if err != nil {
		t.Fatal(err)
	}
	if len(sweep.Jobs) != 1 {
		t.Fatalf("sweep made %d jobs, want 1", len(sweep.Jobs))
	}
	if err := l.Wait(l.ctx, sweep); err != nil {
		t.Fatal(err)
	}
	final, err := ctrl.Job(l.ctx, sweep.Jobs[0])
	if err != nil {
		t.Fatal(err)
	}
	if final.State != protocol.JobCompleted {
		t.Fatalf("job ended %s: %s", final.State, final.Error)
	}
	run := fetchRun(t, ctrl.HTTPURL(), final.RunID)
	if !run.Simulated || run.Status != protocol.RunCompleted {
		t.Fatalf("run simulated=%v status=%s", run.Simulated, run.Status)
	}
	if got, want := len(run.Combinations), len(w.Plan()); got != want {
		t.Fatalf("stored %d combinations, want %d", got, want)
	}
	for _, c := range run.Combinations {
		if c.Completed != 2 || c.Failed != 0 {
			t.Errorf("%s: completed %d failed %d, want 2 and 0 (errors %v)", c.ComboKey, c.Completed, c.Failed, c.Errors)
		}
		if c.TTFT.Mean <= 0 || c.TPS.Mean <= 0 {
			t.Errorf("%s: TTFT %g TPS %g", c.ComboKey, c.TTFT.Mean, c.TPS.Mean)
		}
		if c.MaxInFlight > c.Cameras {
			t.Errorf("%s: %d in flight", c.ComboKey, c.MaxInFlight)
		}
		if c.Telemetry == nil {
			t.Errorf("%s: no telemetry summary", c.ComboKey)
		}
	}
	if run.Engine.Name != "vLLM" || run.Engine.Version == "" || len(run.Engine.Command) < 2 || run.Engine.Command[1] != "sim" ||
		run.Device.Name != device || run.Device.Kind != protocol.DeviceSimulated || run.Client.ImageSetHash == "" || run.SimSpeedup != 50 {
		t.Errorf("run metadata missing: engine %+v device %q/%s client %+v speedup %g", run.Engine, run.Device.Name, run.Device.Kind, run.Client, run.SimSpeedup)
	}

	// Redeliver one result message: JetStream stores it again (no message
	// id), the controller ingests it again, and the store still has it once.
	// The test plays the server redelivering, so it signs in as the controller.
	_, js := testutil.ConnectJS(t, ctrl.NATSURL(), testutil.NkeyFile(t, ctrl.NATSSeedFile()))
	dup := run.Combinations[0]
	hdr := run
	hdr.Combinations = nil
	data, _ := json.Marshal(protocol.ResultMessage{Schema: protocol.SchemaVersion, AgentID: "it-agx", Run: hdr, Combination: &dup})
	ack, err := js.Publish(l.ctx, protocol.AgentSubject("it-agx", protocol.KindResult), data)
	if err != nil {
		t.Fatal(err)
	}
	waitIngested(l.ctx, t, js, ack.Sequence)
	again := fetchRun(t, ctrl.HTTPURL(), final.RunID)
	if len(again.Combinations) != len(run.Combinations) {
		t.Fatalf("after redelivery %d combinations, want %d", len(again.Combinations), len(run.Combinations))
	}
	if again.Combinations[0].Completed != run.Combinations[0].Completed {
		t.Fatalf("redelivery changed the counts")
	}
	var list []protocol.Run
	getJSON(t, ctrl.HTTPURL()+"/api/runs", &list)
	if len(list) != 1 || !list[0].Simulated {
		t.Fatalf("/api/runs = %d runs (simulated %v), want the one simulated run", len(list), len(list) > 0 && list[0].Simulated)
	}

	// The explorer, mounted in the controller, shows the run as a simulated row.
	var ds explorer.Dataset
	getJSON(t, ctrl.HTTPURL()+"/api/explorer/data", &ds)
	if len(ds.Rows) != 1 || !ds.Rows[0].Simulated || ds.SimulatedRows != 1 || ds.Rows[0].Device != device {
		t.Fatalf("explorer data: %+v", ds)
	}
	if got := len(ds.Rows[0].Points); got != len(w.Plan()) {
		t.Fatalf("explorer row has %d points, want %d", got, len(w.Plan()))
	}
	var rows explorer.RowsResponse
	getJSON(t, ctrl.HTTPURL()+"/api/explorer/rows?size=720p&cameras=2&images=1&target=30", &rows)
	if len(rows.Rows) != 1 || rows.Rows[0].MaxCamerasLabel != "2+" {
		t.Fatalf("explorer rows at 2 cameras, 30 s: %+v", rows.Rows)
	}
	resp, err := http.Get(ctrl.HTTPURL() + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("GET / = %s %s, want the explorer page", resp.Status, resp.Header.Get("Content-Type"))
	}
}
