package explorer

import (
	"strings"
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

// The terminal table says why a row's requests all failed.
func TestTableSaysWhyEveryRequestFailed(t *testing.T) {
	r := testRun("r", 0, protocol.RunCompleted, 1)
	c := combo("2K", 1, 1, 0, 0, 5)
	c.Errors = []protocol.ErrorCount{{Error: "HTTP 400: exceeds largest input", Count: 5}}
	r.Combinations = append(r.Combinations, c)
	res := Select(Aggregate([]protocol.Run{r}, t0), Query{Size: "2K", Cameras: 1, Images: 1, Target: 3})
	if len(res.Rows) != 1 || res.Rows[0].Error != "HTTP 400: exceeds largest input" {
		t.Fatalf("rows %+v", res.Rows)
	}
	var b strings.Builder
	if err := WriteTable(&b, res); err != nil {
		t.Fatal(err)
	}
	if want := "  Qwen3-VL-8B-Instruct (Q8_0, llama.cpp) on Jetson AGX Orin · MAXN: 5 requests failed: HTTP 400: exceeds largest input\n"; !strings.Contains(b.String(), want) || !strings.Contains(b.String(), "all failed") {
		t.Errorf("table:\n%s\nwant the line %q", b.String(), want)
	}
}
