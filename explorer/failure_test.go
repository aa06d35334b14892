package explorer

import (
	"testing"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// A combination where every request failed keeps why, for the page to
// show: the error most of its requests failed with.
func TestAllFailedPointKeepsTheReason(t *testing.T) {
	r := testRun("r", 0, protocol.RunCompleted, 1)
	c := combo("2K", 1, 1, 0, 0, 5)
	c.Errors = []protocol.ErrorCount{{Error: "timeout", Count: 1}, {Error: "HTTP 400: exceeds largest input", Count: 4}}
	r.Combinations = append(r.Combinations, c)
	for _, p := range onlyRow(t, Aggregate([]protocol.Run{r}, t0)).Points {
		if p.Size == "2K" {
			if p.Completed != 0 || p.Failed != 5 || p.Error != "HTTP 400: exceeds largest input" {
				t.Errorf("2K point %+v, want 5 failed and the most frequent error", p)
			}
			return
		}
	}
	t.Fatal("the all-failed 2K combination is not a point")
}
