package loadgen

import (
	"math"
	"sync/atomic"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// loopTally keeps a closed loop's records as they come and tells onReq.
// recs nil means a warm-up: nothing is kept.
type loopTally struct {
	recs  []protocol.RequestRecord
	onReq func(protocol.RequestRecord, Progress)
	// arrive is when each request arrived on the simulator's clock, NaN
	// where it did not say.
	arrive       []float64
	done, failed atomic.Int64
	ttftSum      atomic.Int64 // nanoseconds, completed requests
}

func newLoopTally(recs []protocol.RequestRecord, onReq func(protocol.RequestRecord, Progress)) *loopTally {
	t := &loopTally{recs: recs, onReq: onReq, arrive: make([]float64, len(recs))}
	for i := range t.arrive {
		t.arrive[i] = math.NaN()
	}
	return t
}

// keep records request i, which arrived at the simulator at at when
// timed, with in requests still in flight.
func (t *loopTally) keep(i int, rec protocol.RequestRecord, at float64, timed bool, in int) {
	if t.recs == nil {
		return
	}
	if rec.Error == "" {
		t.done.Add(1)
		t.ttftSum.Add(int64(rec.TTFT * 1e9))
	} else {
		t.failed.Add(1)
	}
	t.recs[i] = rec
	if timed {
		t.arrive[i] = at
	}
	if t.onReq == nil {
		return
	}
	d := t.done.Load()
	p := Progress{Done: int(d), Failed: int(t.failed.Load()), Total: len(t.recs), InFlight: in}
	if d > 0 {
		p.MeanTTFT = float64(t.ttftSum.Load()) / 1e9 / float64(d)
	}
	t.onReq(rec, p)
}

// onSimClock moves the starts of the requests the simulator timed onto its
// clock, where their times already are (SimTimings): the first of them to
// arrive starts where the earliest of them started. The simulator's clock holds while it reads and parses
// a request, but the loop's own clock does not: with large pictures, each
// answer's end waits in real time for the requests that arrived before it
// to be parsed, and the next start, taken on the loop's clock, would sit
// that long after the end its record says, which a throughput over the
// loop's window would count as the engine's time. Requests it did not
// time (failed ones) keep the loop's clock.
func onSimClock(recs []protocol.RequestRecord, arrive []float64) {
	origin, base := math.Inf(1), math.Inf(1)
	for i, at := range arrive {
		if !math.IsNaN(at) {
			origin, base = math.Min(origin, at), math.Min(base, recs[i].Start)
		}
	}
	for i, at := range arrive {
		if !math.IsNaN(at) {
			recs[i].Start = base + at - origin
		}
	}
}
