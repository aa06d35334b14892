package controller

import (
	"encoding/json"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/controller/store"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// hugeWorkload is the sweep of the security review: one size, cameras
// 1..1024 and 2,000 frame intervals, about 22 KB of JSON that plans two
// million combinations.
func hugeWorkload() protocol.Workload {
	w := testWorkload()
	w.Sizes = []string{"720p"}
	w.Cameras = make([]int, protocol.MaxCameraLevel)
	for i := range w.Cameras {
		w.Cameras[i] = i + 1
	}
	w.FrameIntervalSec = make([]float64, 2000)
	for i := range w.FrameIntervalSec {
		w.FrameIntervalSec[i] = float64(i+1) / 10
	}
	return w
}

// heapInUse is the live heap after a collection, in bytes.
func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// The huge sweep, posted with the API token, is a 400 naming the field and
// its limit; nothing of it is stored, planned or kept.
func TestAHugeSweepIsRefusedOverHTTP(t *testing.T) {
	c := startController(t, t.TempDir())
	announced(t, c, "a1", "d1")
	body, err := json.Marshal(protocol.Sweep{Agents: []string{"a1"}, Workload: hugeWorkload()})
	if err != nil {
		t.Fatal(err)
	}
	before := heapInUse()
	began := time.Now()
	code, answer := postJSON(t, c.HTTPURL()+"/api/sweeps", string(body))
	took := time.Since(began)
	grew := int64(heapInUse()) - int64(before)
	var e struct{ Error string }
	if err := json.Unmarshal([]byte(answer), &e); err != nil || code != http.StatusBadRequest ||
		e.Error != "workload.frame_interval_sec: 2000 intervals, at most 16" {
		t.Fatalf("POST %d bytes: %d %.300s; want 400 naming workload.frame_interval_sec and 16", len(body), code, answer)
	}
	if grew > 50<<20 {
		t.Errorf("the controller's heap grew %d MB answering it", grew>>20)
	}
	var sweeps []api.SweepView
	getJSON(t, c.HTTPURL()+"/api/sweeps", &sweeps)
	var jobs []api.JobView
	getJSON(t, c.HTTPURL()+"/api/jobs", &jobs)
	if len(sweeps) != 0 || len(jobs) != 0 {
		t.Errorf("after the refusal: %d sweeps, %d jobs stored", len(sweeps), len(jobs))
	}
	t.Logf("%d bytes refused in %s, heap %+d bytes", len(body), took, grew)
}

// A job past the limits that the store holds anyway (a build without them
// took it) is not planned for its progress: the progress is refused, and
// the controller's heap stays where it was.
func TestProgressOfAStoredHugeJobIsRefusedWithoutPlanning(t *testing.T) {
	c := startController(t, t.TempDir())
	ev, a := announced(t, c, "a1", "d1")
	jobs := jobsOf(t, c, "a1")
	small, err := c.store.Job(jobs["a1"][0])
	if err != nil {
		t.Fatal(err)
	}
	huge := small
	huge.Job.ID, huge.Job.Workload = small.Job.SweepID+"-huge", hugeWorkload()
	if err := c.store.PutJob(huge); err != nil {
		t.Fatal(err)
	}
	combo := protocol.ComboKey{Size: "720p", Images: 1, Cameras: 1}
	before := heapInUse()
	a.live(t, protocol.KindProgress, progressOf("a1", huge.Job.ID, combo, 1))
	a.live(t, protocol.KindProgress, progressOf("a1", small.Job.ID, combo, 2))
	ev.waitFor(t, 1, progressFrom("a1", small.Job.ID, 2))
	if grew := int64(heapInUse()) - int64(before); grew > 50<<20 {
		t.Errorf("the controller's heap grew %d MB on the huge job's progress", grew>>20)
	}
	if got := ev.waitFor(t, 0, progressFrom("a1", huge.Job.ID, 1)); len(got) != 0 {
		t.Errorf("the huge job's progress was taken: %+v", got)
	}
	if n := refusalCount(t, c, RefusalProgress); n != 1 {
		t.Errorf("progress refusals %v, want 1", n)
	}
}

// The order of a run's combinations comes from its plan only when the
// workload is within the limits: a run header is not held to them.
func TestSortCombinationsOfAHugeWorkloadDoesNotPlan(t *testing.T) {
	cs := []protocol.Combination{
		{ComboKey: protocol.ComboKey{Size: "720p", Images: 1, Cameras: 2, FrameIntervalSec: 0.1}},
		{ComboKey: protocol.ComboKey{Size: "720p", Images: 1, Cameras: 1}},
	}
	w := hugeWorkload()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	store.SortCombinations(w, cs)
	runtime.ReadMemStats(&m1)
	if b := m1.TotalAlloc - m0.TotalAlloc; b > 1<<20 {
		t.Errorf("sorting two combinations allocated %d bytes", b)
	}
	if got := cs[0].ComboKey.String() + " " + cs[1].ComboKey.String(); !strings.HasPrefix(got, "720p-1img-1cam ") {
		t.Errorf("order %s, want by cameras", got)
	}
}
