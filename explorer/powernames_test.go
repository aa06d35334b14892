package explorer

import (
	"bytes"
	"strings"
	"testing"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// A GPU host measured as found at its 600 W limit and one a sweep set to
// 600 W are in one state: one row, named with its limit.
func TestGPUDefaultLimitAndTheSameLimitSetAreOneRow(t *testing.T) {
	gpu := func(id string, minutes int, set float64) protocol.Run {
		r := testRun(id, minutes, protocol.RunCompleted, 1)
		r.Config.Device = "RTX PRO 6000"
		r.Config.PowerLimitW = set
		r.Device = protocol.DeviceFacts{Name: "RTX PRO 6000", Kind: protocol.DeviceDGPU,
			GPUs: []protocol.GPUFacts{{Name: "RTX PRO 6000", DefaultPowerLimitW: 600, PowerLimitW: 600, MaxPowerLimitW: 600, MinPowerLimitW: 150}}}
		return r
	}
	ds := Aggregate([]protocol.Run{gpu("found", 0, 0), gpu("set", 60, 600)}, t0)
	row := onlyRow(t, ds)
	if row.PowerMode != "600 W limit" || row.Run.ID != "set" || len(row.OtherRuns) != 1 || row.OtherRuns[0].ID != "found" {
		t.Errorf("row %q power %q, run %s, earlier %+v; want one 600 W limit row of both runs", DeviceLabel(row.RowConfig), row.PowerMode, row.Run.ID, row.OtherRuns)
	}
	// A limit the sweep set below the default is another configuration.
	ds = Aggregate([]protocol.Run{gpu("found", 0, 0), gpu("low", 60, 450)}, t0)
	if len(ds.Rows) != 2 {
		t.Fatalf("%d rows for 600 W and 450 W, want 2", len(ds.Rows))
	}
}

// A note under the table names the row's power setting: two modes of one
// model on one device drop frames differently, and each note says which.
func TestTableNotesNameThePowerSetting(t *testing.T) {
	paced := func(id, mode string, dropped int) protocol.Run {
		r := testRun(id, 0, protocol.RunCompleted, 1)
		r.Config.PowerMode = mode
		c := combo("720p", 1, 1, 1, 8-dropped, 0)
		c.FrameIntervalSec = 5
		c.Pacing = &protocol.Pacing{FramesDue: 8, FramesSent: 8 - dropped, FramesDropped: dropped}
		r.Combinations = append(r.Combinations, c)
		return r
	}
	ds := Aggregate([]protocol.Run{paced("a", "15W", 5), paced("b", "MAXN", 7)}, t0)
	q := DefaultQuery()
	q.Interval = 5
	var out bytes.Buffer
	if err := WriteTable(&out, Select(ds, q)); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"on Jetson AGX Orin · 15W: 5 of 8 frames dropped", "on Jetson AGX Orin · MAXN: 7 of 8 frames dropped"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
}
