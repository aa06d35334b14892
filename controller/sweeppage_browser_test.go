package controller

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/vlmfleet/vlmfleet/internal/testutil/browsertest"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// /sweeps/{id} lists a sweep's jobs in natural order (j2 before j10) and
// shows a running job's combination, k of n, and its live TTFT.
func TestSweepPageOrdersJobsAndShowsProgress(t *testing.T) {
	path := chromium(t)
	c := startController(t, t.TempDir())
	deps := make([]string, 11)
	for i := range deps {
		deps[i] = fmt.Sprintf("d%d", i+1)
	}
	_, a := announced(t, c, "orin-1", deps...)
	s := submit(t, c, protocol.Sweep{Agents: []string{"orin-1"}, Workload: testWorkload()})
	if len(s.Jobs) != 11 {
		t.Fatalf("%d jobs, want 11", len(s.Jobs))
	}

	ctx := browsertest.Open(t, path, 60*time.Second)
	if err := chromedp.Do(ctx, chromedp.Navigate(c.HTTPURL()+"/sweeps/"+s.ID)); err != nil {
		t.Fatal(err)
	}
	poll := browsertest.Poller(t, ctx)
	poll(`document.getElementById("conn").textContent === "live" && document.querySelectorAll("#jobs tr[data-job]").length === 11`)
	order, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#jobs tr[data-job]")].map(r => r.dataset.job)`))
	if err != nil {
		t.Fatal(err)
	}
	for i, id := range order {
		if want := fmt.Sprintf("%s-j%d", s.ID, i+1); id != want {
			t.Fatalf("row %d is %s, want %s (all: %q)", i+1, id, want, order)
		}
	}

	job := s.Jobs[1]
	a.state(t, job, protocol.JobRunning, 1, true)
	p := protocol.Progress{Schema: 1, AgentID: "orin-1", JobID: job, RunID: job + "-a1", Time: time.Now().UTC(), Phase: protocol.PhaseMeasure,
		Combo: protocol.ComboKey{Size: "720p", Images: 1, Cameras: 2}, ComboIdx: 2, ComboN: 5, Done: 3, Total: 8, MeanTTFT: 2.41, Simulated: true}
	data, _ := json.Marshal(p)
	if err := a.nc.Publish(protocol.AgentSubject("orin-1", protocol.KindProgress), data); err != nil {
		t.Fatal(err)
	}
	row := `document.querySelector('#jobs tr[data-job=` + jsString(job) + `]')`
	poll(row + `.querySelector(".combo").textContent === "combination 3 of 5 · 720p · 1 img · 2 cam · 3/8"`)
	poll(row + `.querySelector(".ttft").textContent === "2.41 s" && ` + row + `.querySelector(".state").textContent.startsWith("running")`)
}

// /sweeps shows the newest sweeps first, 25 of them, and the rest on "more".
func TestSweepsPageNewestFirstWithMore(t *testing.T) {
	path := chromium(t)
	c := startController(t, t.TempDir())
	announced(t, c, "orin-1", "d1")
	var ids []string
	for i := 0; i < 27; i++ {
		ids = append(ids, submit(t, c, protocol.Sweep{Name: fmt.Sprintf("n%d", i), Agents: []string{"orin-1"}, Workload: testWorkload()}).ID)
	}
	ctx := browsertest.Open(t, path, 60*time.Second)
	if err := chromedp.Do(ctx, chromedp.Navigate(c.HTTPURL()+"/sweeps")); err != nil {
		t.Fatal(err)
	}
	rows := func() []string {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#sweeps tr[data-sweep]")].map(r => r.dataset.sweep)`))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	poll := browsertest.Poller(t, ctx)
	poll(`document.querySelectorAll("#sweeps tr[data-sweep]").length > 0`)
	got := rows()
	if len(got) != 25 || got[0] != ids[26] || got[24] != ids[2] {
		t.Fatalf("first page %q, want the 25 newest of %q, newest first", got, ids)
	}
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[any](`document.getElementById("more").click()`)); err != nil {
		t.Fatal(err)
	}
	poll(`document.querySelectorAll("#sweeps tr[data-sweep]").length === 27 && document.getElementById("more").style.display === "none"`)
	if got := rows(); got[26] != ids[0] {
		t.Errorf("after more, the last row is %s, want the oldest %s", got[26], ids[0])
	}
}
