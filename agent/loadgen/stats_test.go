package loadgen

import (
	"testing"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// The tail ranks every request sent, a failed one as an answer that never
// started: 18 answers in 1..18 s and 2 failures put p90 on the 18th
// answer (rank 18 of 20) and p95 on a failure, so no p95 can be judged.
func TestSummarizeTailCountsFailuresAsUnstarted(t *testing.T) {
	var recs []protocol.RequestRecord
	for i := 18; i >= 1; i-- {
		recs = append(recs, protocol.RequestRecord{TTFT: float64(i)})
	}
	recs = append(recs, protocol.RequestRecord{Error: "HTTP 503: busy"}, protocol.RequestRecord{Error: "HTTP 503: busy"})
	var c protocol.Combination
	summarize(&c, recs)
	tail := c.Tail
	if tail == nil || tail.Due != 20 || tail.Unstarted != 2 || tail.P90 != 18 || tail.P95 != 0 {
		t.Fatalf("tail %+v, want 20 due, 2 unstarted, p90 18 s, p95 on a failure (0)", tail)
	}
	if p90, ok := tail.At(90); !ok || p90 != 18 {
		t.Errorf("p90 %g %v, want 18 s", p90, ok)
	}
	if _, ok := tail.At(95); ok {
		t.Error("p95 falls on a failed request: it must not be judged as an answer")
	}
	if c.TTFT.N != 18 || c.TTFT.Mean != 9.5 {
		t.Errorf("TTFT %+v: the mean leaves the failures out", c.TTFT)
	}

	var none protocol.Combination
	summarize(&none, nil)
	if none.Tail == nil || none.Tail.Due != 0 {
		t.Errorf("no requests: tail %+v, want one with nothing due", none.Tail)
	}
}
