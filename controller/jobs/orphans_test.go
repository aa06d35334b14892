package jobs

import "testing"

// The events consumer covers a sequence once it has acknowledged it, or
// everything the stream holds: a stream recreated since numbers afresh, and
// what its predecessor held is gone. A report the stream holds and the
// consumer has not acknowledged is never covered, whatever the consumer's
// pending counts say (the server counts it pending only after
// acknowledging its publish).
func TestEventsProgressCovers(t *testing.T) {
	for _, tc := range []struct {
		p    eventsProgress
		seq  uint64
		want bool
	}{
		{eventsProgress{ackFloor: 1, streamLast: 2}, 2, false}, // the report still to ingest
		{eventsProgress{ackFloor: 2, streamLast: 2}, 2, true},
		{eventsProgress{ackFloor: 5, streamLast: 9}, 4, true},
		{eventsProgress{ackFloor: 3, streamLast: 3}, 500, true}, // stream recreated, all ingested
		{eventsProgress{ackFloor: 2, streamLast: 3}, 500, false},
		{eventsProgress{}, 500, true}, // stream recreated, empty
	} {
		if got := tc.p.covers(tc.seq); got != tc.want {
			t.Errorf("%+v covers %d: %v, want %v", tc.p, tc.seq, got, tc.want)
		}
	}
}
