package loadgen

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// Cameras on a frame clock (an open loop). At k cameras and an interval T,
// camera i ticks at i·T/k and every T after. At each tick it takes the
// frame of that moment and sends it at once if its previous answer has
// ended; otherwise it drops the frame and counts it. A live pipeline
// samples the newest frame: a frame queued behind a slow answer would be
// stale when answered, and a queue would hide that the engine does not
// keep up.
//
// Against the simulator, which runs many times faster than its device, the
// host's delays between a tick and its frame's arrival would be multiplied
// by the speed-up. Each frame therefore says its tick (FrameHeader), and
// the simulator keeps the clock on its own clock; see framesToDrop.

// frameClock is the ticks of one paced phase, every one counted from the
// phase's start on the monotonic clock, so that a late timer never delays
// the ticks after it.
type frameClock struct {
	start    time.Time
	interval time.Duration
	cameras  int
}

// offset is when camera cam's tick n falls after the start.
func (c frameClock) offset(cam, tick int) time.Duration {
	return time.Duration((float64(tick) + float64(cam)/float64(c.cameras)) * float64(c.interval))
}

// frameInterval is the combination's frame interval on the endpoint's
// time scale: a simulator running faster than its device ticks faster.
func (r *runner) frameInterval(pc protocol.PlannedCombo) time.Duration {
	sec := pc.FrameIntervalSec
	if r.t.Speedup > 1 {
		sec /= r.t.Speedup
	}
	return time.Duration(sec * float64(time.Second))
}

// pacedCombo measures a combination on a frame clock. The warm-up runs
// WarmupRequests ticks per camera on the same clock, discarded; the
// measured clock starts once its answers have all ended, so that no
// warm-up answer drops a measured frame. Every camera then runs its ticks
// (the plan's frames due shared among the cameras), and the answers still
// running after the last tick are awaited: those frames were sent.
func (r *runner) pacedCombo(ctx context.Context, idx, n int, pc protocol.PlannedCombo, size string, cams []*camera,
	c protocol.Combination, h Hooks) (protocol.Combination, error) {
	k := len(cams)
	ticks := (pc.Requests + k - 1) / k
	pics, wpics, err := r.comboPictures(size, pc.Images, k*ticks, k*r.w.WarmupRequests)
	if err != nil {
		return c, fmt.Errorf("loadgen: %s: %w", pc.ComboKey, err)
	}
	clock := frameClock{interval: r.frameInterval(pc), cameras: k}
	if wpics != nil {
		if h.ComboStart != nil {
			h.ComboStart(idx, n, pc, true)
		}
		warm := &pacedPhase{r: r, pc: pc, cams: cams, pics: wpics, clock: clock, ticks: r.w.WarmupRequests}
		warm.run(ctx)
		c.Warmup = int(warm.sent.Load())
		if err := ctx.Err(); err != nil {
			return c, fmt.Errorf("loadgen: %s warm-up: %w", pc.ComboKey, err)
		}
	}
	if h.ComboStart != nil {
		h.ComboStart(idx, n, pc, false)
	}
	p := &pacedPhase{r: r, pc: pc, cams: cams, pics: pics, clock: clock, ticks: ticks,
		frames: make([]pacedFrame, k*ticks)}
	if h.Request != nil {
		p.onReq = func(rec protocol.RequestRecord, pr Progress) { h.Request(pc.ComboKey, rec, pr) }
	}
	p.run(ctx)
	finished := time.Now()
	if err := ctx.Err(); err != nil {
		return c, fmt.Errorf("loadgen: %s: %w", pc.ComboKey, err)
	}
	// The window runs from the first tick to the later of the last tick
	// and the last answer, on the monotonic clock.
	c.WallSec = finished.Sub(p.clock.start).Seconds()
	c.StartedAt, c.FinishedAt = p.clock.start.UTC(), finished.UTC()
	c.MaxInFlight = int(p.maxInFlight.Load())
	p.record(&c)
	return c, nil
}

// pacedPhase is one run of the cameras on a frame clock: a warm-up's,
// whose frames are thrown away, or a measurement's.
type pacedPhase struct {
	r     *runner
	pc    protocol.PlannedCombo
	cams  []*camera
	pics  pictures
	clock frameClock
	ticks int
	id    string // the clock's, in FrameHeader
	// frames is the measurement's frames by number (tick·cameras +
	// camera: the order they fall due); nil in a warm-up. Each is written
	// by the one goroutine that sent it and read once all have ended.
	frames []pacedFrame
	onReq  func(protocol.RequestRecord, Progress)

	sent, dropped, inFlight, maxInFlight atomic.Int64
	done, failed, ttftSum                atomic.Int64 // ttftSum: nanoseconds
}

// pacedFrame is one frame due: whether it was sent, its record and its
// answer's age.
type pacedFrame struct {
	sent bool
	rec  protocol.RequestRecord
	age  float64
}

// pacedCamera is one camera of a paced phase. answering is closed when
// its answer has ended; next is then the tick it takes next.
type pacedCamera struct {
	ci        int
	cam       *camera
	answering chan struct{}
	next      int
}

// run starts the clock and runs every camera's ticks, returning when
// their answers have all ended or ctx ends.
func (p *pacedPhase) run(ctx context.Context) {
	p.id = loopID()
	p.clock.start = time.Now()
	var wg sync.WaitGroup
	for ci, cam := range p.cams {
		wg.Go(func() { p.camera(ctx, &pacedCamera{ci: ci, cam: cam}) })
	}
	wg.Wait()
}

// camera runs one camera's ticks. Its answer runs beside its clock, and
// the frames that fall due while it runs are dropped.
func (p *pacedPhase) camera(ctx context.Context, c *pacedCamera) {
	defer func() {
		if c.answering != nil {
			<-c.answering
		}
	}()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for n := 0; n < p.ticks; {
		timer.Reset(time.Until(p.clock.start.Add(p.clock.offset(c.ci, n))))
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		if skip := p.framesToDrop(c, n); skip > 0 {
			p.dropped.Add(int64(skip))
			n += skip
			continue
		}
		c.answering = make(chan struct{})
		go p.send(ctx, c, n)
		n++
	}
}

// framesToDrop is how many frames from tick n on camera c drops, at tick
// n's time. Against a real engine, the frame of tick n when the answer
// still runs. The simulator keeps the clock on its own (FrameHeader), on
// which the host's delays do not count: the camera waits for the answer
// and drops the ticks before the one the simulator names.
func (p *pacedPhase) framesToDrop(c *pacedCamera, n int) int {
	if c.answering == nil {
		return 0
	}
	if !p.r.t.Simulated {
		select {
		case <-c.answering:
			return 0
		default:
			return 1
		}
	}
	<-c.answering // ends with ctx at the latest
	return max(0, min(c.next, p.ticks)-n)
}

// send sends camera c's frame of tick n and records its answer.
func (p *pacedPhase) send(ctx context.Context, c *pacedCamera, n int) {
	defer close(c.answering)
	f := n*len(p.cams) + c.ci
	segs := p.r.segments(p.pics, f, p.pc.Images)
	rec := protocol.RequestRecord{Camera: c.ci, Seq: f, Images: p.pc.Images}
	c.cam.loop = c.cam.loop[:0]
	if p.r.t.Simulated {
		c.cam.loop = appendFrameField(c.cam.loop, p.id, c.ci, n, len(p.cams), p.ticks, p.clock.interval.Seconds())
	}
	p.sent.Add(1)
	now := p.inFlight.Add(1)
	for m := p.maxInFlight.Load(); now > m && !p.maxInFlight.CompareAndSwap(m, now); m = p.maxInFlight.Load() {
	}
	rec.Start = time.Since(p.clock.start).Seconds()
	p.r.send(ctx, c.cam, segs, &rec)
	in := p.inFlight.Add(-1)
	late, next := p.frameFate(c, n, rec)
	c.next = next
	if p.frames == nil {
		return
	}
	end := rec.LastToken
	if end == 0 {
		end = rec.E2E // no token came: the answer's end
	}
	p.frames[f] = pacedFrame{sent: true, rec: rec, age: late + end}
	p.count(rec, in)
}

// frameFate is how late after its tick camera c's frame of tick n was
// taken, and the tick the camera takes next: as the simulator said, or by
// this client's clock, the first tick that fell due after the answer.
func (p *pacedPhase) frameFate(c *pacedCamera, n int, rec protocol.RequestRecord) (late float64, next int) {
	if p.r.t.Simulated && rec.Error == "" {
		if late, next, ok := frameTimings(c.cam.st.sim); ok {
			return late, next
		}
	}
	ended := time.Since(p.clock.start)
	next = n + 1
	for next < p.ticks && p.clock.offset(c.ci, next) < ended {
		next++
	}
	return rec.Start - p.clock.offset(c.ci, n).Seconds(), next
}

// count adds an answer to the progress and reports it.
func (p *pacedPhase) count(rec protocol.RequestRecord, inFlight int64) {
	if rec.Error == "" {
		p.done.Add(1)
		p.ttftSum.Add(int64(rec.TTFT * 1e9))
	} else {
		p.failed.Add(1)
	}
	if p.onReq == nil {
		return
	}
	d := p.done.Load()
	// A dropped frame is never answered: the total is the frames that are
	// or may still be sent.
	pr := Progress{Done: int(d), Failed: int(p.failed.Load()), Total: len(p.frames) - int(p.dropped.Load()), InFlight: int(inFlight)}
	if d > 0 {
		pr.MeanTTFT = float64(p.ttftSum.Load()) / 1e9 / float64(d)
	}
	p.onReq(rec, pr)
}

// record fills c's figures from the measured frames: the usual figures
// over the frames sent, the pacing counts with the answers' age, and the
// TTFT tail with every failed request and dropped frame counted as an
// answer that never started. Set c.WallSec first.
func (p *pacedPhase) record(c *protocol.Combination) {
	var recs []protocol.RequestRecord
	var ages, ttfts []float64
	for _, fr := range p.frames {
		if !fr.sent {
			continue
		}
		recs = append(recs, fr.rec)
		if fr.rec.Error == "" {
			ages = append(ages, fr.age)
			ttfts = append(ttfts, fr.rec.TTFT)
		}
	}
	summarize(c, recs)
	due := len(p.frames)
	c.Pacing = &protocol.Pacing{FramesDue: due, FramesSent: len(recs), FramesDropped: due - len(recs), Age: stats(ages)}
	sort.Float64s(ttfts)
	c.Tail = protocol.NewTTFTTail(ttfts, c.Failed+c.Pacing.FramesDropped)
}
