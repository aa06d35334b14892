package explorer

import (
	"strings"
	"testing"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// A row whose ladder kept up with 8 cameras as one round, and whose
// search measured 6 (keeps up) and 7 (does not) sustained: Max Cameras
// is 6, the figures at 6 cameras are the sustained level's, and the title
// says the answer is sustained.
func TestRowReadsTheSustainedLevels(t *testing.T) {
	level := func(cams int, ttft float64, sustained bool) Point {
		p := Point{Size: "720p", Images: 1, Cameras: cams, TTFT: ttft, Completed: 8}
		if sustained {
			p.Load, p.Search, p.Completed = protocol.LoadSustained, true, 3*cams
		}
		return p
	}
	r := Row{Points: []Point{level(4, 1.8, false), level(6, 2.1, false), level(8, 2.43, false), level(16, 4, false),
		level(8, 3.65, true), level(4, 2.25, true), level(6, 2.95, true), level(7, 3.3, true)}}
	v := rowViewAt(r, Query{Size: "720p", Images: 1, Cameras: 6, Target: 3})
	if v.MaxCameras != 6 || v.Plus || !v.Exact || !v.Sustained {
		t.Errorf("Max Cameras %s, exact %v, sustained %v; want 6, exact and sustained", v.MaxCamerasLabel, v.Exact, v.Sustained)
	}
	if v.TTFT == nil || *v.TTFT != 2.95 {
		t.Errorf("figures at 6 cameras %v, want the sustained level's 2.95 s", v.TTFT)
	}
	if title := maxCamerasTitle(v); !strings.HasSuffix(title, "sustained, cameras that keep sending") {
		t.Errorf("title %q does not say the answer is sustained", title)
	}
	var table strings.Builder
	q := Query{Size: "720p", Images: 1, Cameras: 6, Target: 3}
	if err := WriteTable(&table, RowsResponse{Query: q, Rows: []RowView{v}}); err != nil || !strings.Contains(table.String(), " 6 sustained ") {
		t.Errorf("the table does not say the answer is sustained (%v):\n%s", err, table.String())
	}
	ladder := Row{Points: r.Points[:4]}
	if v := rowViewAt(ladder, Query{Size: "720p", Images: 1, Cameras: 6, Target: 3}); v.MaxCameras != 8 || v.Sustained {
		t.Errorf("the ladder alone: Max Cameras %s, sustained %v; want 8, one round", v.MaxCamerasLabel, v.Sustained)
	}
}

// A run's CSV says each back-to-back level's load, and a sustained
// level's rounds and window, in its last columns.
func TestRunCSVSaysTheLoad(t *testing.T) {
	round := protocol.Combination{ComboKey: protocol.ComboKey{Size: "720p", Images: 1, Cameras: 8}, Completed: 8}
	sustained := round
	sustained.Load, sustained.Rounds, sustained.WindowSec = protocol.LoadSustained, 3, 4.5
	paced := round
	paced.FrameIntervalSec = 5
	run := protocol.Run{ID: "r", Combinations: []protocol.Combination{round, sustained, paced}}
	var b strings.Builder
	if err := WriteRunCSV(&b, &run); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	for i, want := range []string{",load,rounds,window_sec", ",burst,,", ",sustained,3,4.5", ",,,"} {
		if !strings.HasSuffix(lines[i], want) {
			t.Errorf("line %d %q, want it to end %q", i+1, lines[i], want)
		}
	}
}
