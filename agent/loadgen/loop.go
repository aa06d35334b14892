package loadgen

import (
	"context"
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
// time starts, and send sends it.
func (r *runner) closedLoop(ctx context.Context, cams []*camera, images, total int, build func(i int) []string, send sendFunc,
	recs []protocol.RequestRecord, onReq func(protocol.RequestRecord, Progress), maxInFlight *atomic.Int64) {
	var (
		next, inFlight, done, failed atomic.Int64
		ttftSum                      atomic.Int64 // nanoseconds, completed requests
		wg                           sync.WaitGroup
	)
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
				if recs == nil {
					continue
				}
				if rec.Error == "" {
					done.Add(1)
					ttftSum.Add(int64(rec.TTFT * 1e9))
				} else {
					failed.Add(1)
				}
				recs[i] = rec
				if onReq != nil {
					d := done.Load()
					p := Progress{Done: int(d), Failed: int(failed.Load()), Total: total, InFlight: int(in)}
					if d > 0 {
						p.MeanTTFT = float64(ttftSum.Load()) / 1e9 / float64(d)
					}
					onReq(rec, p)
				}
			}
		}()
	}
	wg.Wait()
}
