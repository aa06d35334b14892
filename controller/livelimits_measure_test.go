package controller

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/internal/testutil"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// TestMeasureLiveAttack makes a hostile agent's attack on the live views and
// reports what it costs the controller: an agent with its own credentials
// sends 100 progress messages of about 1 MB with made-up job ids, then
// /api/live is read 3 times. It reports the size of /api/live and the
// process's resident memory (VmRSS, and its peak VmHWM) before and after:
//
//	VLMFLEET_MEASURE=1 go test -count=1 -v -run TestMeasureLiveAttack ./controller/
func TestMeasureLiveAttack(t *testing.T) {
	if os.Getenv("VLMFLEET_MEASURE") == "" {
		t.Skip("a measurement: VLMFLEET_MEASURE=1 runs it")
	}
	c := startController(t, t.TempDir())
	ev, a := announced(t, c, "a1", "d1")
	job := submit(t, c, protocol.Sweep{Agents: []string{"a1"}, Workload: testWorkload()}).Jobs[0]
	runtime.GC()
	rss0, hwm0 := residentMiB()
	big := strings.Repeat("x", 1_000_000)
	for i := range 100 {
		p := protocol.Progress{Schema: 1, AgentID: "a1", JobID: fmt.Sprintf("made-up-%d", i), Phase: protocol.PhaseMeasure, Message: big, Time: time.Now().UTC()}
		data, _ := json.Marshal(p)
		if err := a.nc.Publish(protocol.AgentSubject("a1", protocol.KindProgress), data); err != nil {
			t.Fatal(err)
		}
	}
	// The agent's own progress, after the attack on the same connection,
	// is handled after it.
	marker, _ := json.Marshal(protocol.Progress{Schema: 1, AgentID: "a1", JobID: job, Phase: protocol.PhaseMeasure, Done: 42, Time: time.Now().UTC()})
	if err := a.nc.Publish(protocol.AgentSubject("a1", protocol.KindProgress), marker); err != nil {
		t.Fatal(err)
	}
	ev.waitFor(t, 1, func(e api.Event) bool { p, ok := e.Data.(protocol.Progress); return ok && p.Done == 42 })
	size := 0
	start := time.Now()
	for range 3 {
		resp, err := http.Get(c.HTTPURL() + "/api/live")
		if err != nil {
			t.Fatal(err)
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		size = int(n)
	}
	rss1, hwm1 := residentMiB()
	t.Logf("/api/live: %d bytes, 3 reads in %s; resident %d MiB before the attack (peak %d), %d MiB after 3 reads (peak %d)",
		size, time.Since(start).Round(time.Millisecond), rss0, hwm0, rss1, hwm1)
}

// residentMiB is the process's VmRSS and VmHWM in MiB.
func residentMiB() (rss, hwm int64) {
	return testutil.ProcStatusKB("VmRSS") >> 10, testutil.ProcStatusKB("VmHWM") >> 10
}
