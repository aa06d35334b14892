package loadgen

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// loop runs the closed loop: every camera sends its next request as soon as
// its previous one has ended, taking request numbers from one counter until
// total have been sent, so never more than len(cams) are in flight. recs nil
// means a warm-up whose records are thrown away.
func (r *runner) loop(ctx context.Context, cams []*camera, pc protocol.PlannedCombo, total int, pics pictures,
	recs []protocol.RequestRecord, onReq func(protocol.RequestRecord, Progress), maxInFlight *atomic.Int64) {
	build := func(i int) []string { return r.segments(pics, i, pc.Images) }
	send := func(ctx context.Context, cam *camera, _ int, segs []string, rec *protocol.RequestRecord) {
		r.send(ctx, cam, segs, rec)
	}
	r.closedLoop(ctx, cams, pc.Images, total, build, send, recs, onReq, maxInFlight)
}

// sendFunc sends request number i, laid out as segs, on cam and records
// it in rec.
type sendFunc func(ctx context.Context, cam *camera, i int, segs []string, rec *protocol.RequestRecord)

// closedLoop is loop for any request: build lays out request i before its
// time starts, and send sends it. Against the simulator the records' starts
// are put on its clock once the loop is over (onSimClock).
func (r *runner) closedLoop(ctx context.Context, cams []*camera, images, total int, build func(i int) []string, send sendFunc,
	recs []protocol.RequestRecord, onReq func(protocol.RequestRecord, Progress), maxInFlight *atomic.Int64) {
	var (
		next, inFlight atomic.Int64
		wg             sync.WaitGroup
	)
	tally := newLoopTally(recs, onReq)
	start := time.Now()
	id := loopID()
	for ci, cam := range cams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= total {
					return
				}
				segs := build(i)
				rec := protocol.RequestRecord{Camera: ci, Seq: i, Images: images}
				now := inFlight.Add(1)
				if maxInFlight != nil {
					for m := maxInFlight.Load(); now > m && !maxInFlight.CompareAndSwap(m, now); m = maxInFlight.Load() {
					}
				}
				cam.loop = appendLoopField(cam.loop[:0], id, i, total, len(cams))
				rec.Start = time.Since(start).Seconds()
				send(ctx, cam, i, segs, &rec)
				in := inFlight.Add(-1)
				at, timed := cam.simArrival()
				tally.keep(i, rec, at, timed && rec.Error == "", int(in))
			}
		}()
	}
	wg.Wait()
	if recs != nil {
		onSimClock(recs, tally.arrive)
	}
}

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
