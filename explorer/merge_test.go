package explorer

import (
	"testing"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// A later run that measured fewer levels does not hide what an earlier
// one measured beyond them: each level is the newest run's that measured
// it, and a level from an earlier run says which.
func TestLaterCoarserRunKeepsTheEarlierLevels(t *testing.T) {
	level := func(cams int, mean, p90 float64, search bool) protocol.Combination {
		c := combo("720p", 1, cams, mean, 8, 0)
		c.TTFT.P90, c.Search = p90, search
		c.Tail = &protocol.TTFTTail{Due: 8, P90: p90, P95: p90}
		return c
	}
	searched := testRun("searched", 0, protocol.RunCompleted, 1)
	searched.Combinations = []protocol.Combination{level(1, 0.2, 0.3, false), level(2, 0.3, 0.4, false), level(4, 0.4, 0.6, false),
		level(8, 0.6, 0.9, false), level(16, 1.2, 2.1, false), level(32, 2.6, 4.2, true), level(24, 2.1, 3.6, true),
		level(20, 1.5, 2.8, true), level(22, 1.8, 3.2, true), level(21, 1.6, 2.9, true)}
	repeat := testRun("repeat", 60, protocol.RunCompleted, 1)
	repeat.Combinations = []protocol.Combination{level(1, 0.25, 0.35, false), level(2, 0.3, 0.45, false), level(4, 0.45, 0.7, false)}

	row := onlyRow(t, Aggregate([]protocol.Run{searched, repeat}, t0))
	if row.Run.ID != "repeat" || len(row.OtherRuns) != 1 {
		t.Fatalf("row shows run %s with %d earlier, want the repeat and the searched run", row.Run.ID, len(row.OtherRuns))
	}
	for _, p := range row.Points {
		want := ""
		if p.Cameras > 4 {
			want = "searched"
		}
		if p.Run != want {
			t.Errorf("level %d cameras from run %q, want %q", p.Cameras, p.Run, want)
		}
	}
	if p, _ := FindPoint(row.Points, "720p", 1, 1); p.TTFT != 0.25 {
		t.Errorf("1 camera at %.2f s: the newer run's level, 0.25 s, wins", p.TTFT)
	}
	byMean := Select(Dataset{Rows: []Row{row}}, DefaultQuery()).Rows[0]
	q := DefaultQuery()
	q.Statistic = protocol.StatisticP90
	byP90 := Select(Dataset{Rows: []Row{row}}, q).Rows[0]
	if byMean.MaxCamerasLabel != "32+" || byP90.MaxCamerasLabel != "21" {
		t.Errorf("Max Cameras %s by the mean and %s by p90, want the earlier run's 32+ and 21, not the repeat's 4+", byMean.MaxCamerasLabel, byP90.MaxCamerasLabel)
	}
}
