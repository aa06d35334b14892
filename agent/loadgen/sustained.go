package loadgen

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// A sustained level (protocol/load.go): every camera sends its warm-up
// requests, then one more (its ramp), then keeps sending, each request as
// soon as its previous answer ended, with no barrier anywhere. The window
// opens when the last camera's ramp has ended, so that the cameras have
// drifted apart as a deployment's do; a request is measured when it is
// sent inside the window. The window closes with the send that gives
// every camera its rounds of measured requests; each camera then sends
// one more request, unmeasured, so that the measured answers still
// running have the others beside them, and stops once it has ended.

// sendRole is what a request of a sustained level is for, decided as it
// is sent.
type sendRole int

const (
	roleDrift    sendRole = iota // before the window opens: discarded
	roleMeasured                 // inside the window
	roleLast                     // after it: the camera's last, discarded
)

// sustainedLevel is one sustained level while it runs. What the cameras
// share is under mu; each request's record is written by its camera alone.
type sustainedLevel struct {
	r      *runner
	pc     protocol.PlannedCombo
	cams   []*camera
	warm   int // warm-up requests per camera
	rounds int // measured requests every camera sends at least
	wpics  pictures
	pics   pictures
	id     string // the open loop's, in LoopHeader
	seq    atomic.Int64
	// opening tells the hooks that the measured window opens.
	opening func()
	onReq   func(protocol.RequestRecord, Progress)

	inFlight, maxInFlight atomic.Int64

	mu              sync.Mutex
	next            int // the number of the next request after the warm-up (its pictures)
	ramped          int // cameras whose ramp has ended
	open, closed    bool
	openAt, closeAt time.Time
	lastEnd         time.Time // the last measured answer's end
	sent            []int     // measured requests each camera sent
	short           int       // cameras with fewer than rounds measured requests
	recs            []protocol.RequestRecord
	discarded       int // requests sent before the window opened
	done, failed    int
	ttftSum         float64
}

// sustainedCombo measures a back-to-back level under sustained load.
func (r *runner) sustainedCombo(ctx context.Context, idx, n int, pc protocol.PlannedCombo, size string, cams []*camera,
	c protocol.Combination, h Hooks) (protocol.Combination, error) {
	k := len(cams)
	rounds := protocol.SustainedRounds(k, pc.Requests)
	// Requests are numbered without a known end: a picture is made for any
	// number (unique ones as each request is built), so none run out.
	pics, wpics, err := r.comboPictures(size, pc.Images, k*(2*rounds+3), k*r.w.WarmupRequests)
	if err != nil {
		return c, fmt.Errorf("loadgen: %s: %w", pc.ComboKey, err)
	}
	s := &sustainedLevel{r: r, pc: pc, cams: cams, warm: r.w.WarmupRequests, rounds: rounds, wpics: wpics,
		pics: pics, id: loopID(), sent: make([]int, k), short: k}
	s.opening = func() {
		if h.ComboStart != nil {
			h.ComboStart(idx, n, pc, false)
		}
	}
	s.onReq = func(rec protocol.RequestRecord, p Progress) {
		if h.Request != nil {
			h.Request(pc.ComboKey, rec, p)
		}
	}
	if h.ComboStart != nil {
		h.ComboStart(idx, n, pc, true)
	}
	var wg sync.WaitGroup
	for ci := range cams {
		wg.Go(func() { s.camera(ctx, ci) })
	}
	wg.Wait()
	c.Warmup = s.discarded
	if err := ctx.Err(); err != nil {
		return c, fmt.Errorf("loadgen: %s: %w", pc.ComboKey, err)
	}
	s.finish(&c)
	return c, nil
}

// finish fills the combination from the window's requests.
func (s *sustainedLevel) finish(c *protocol.Combination) {
	c.StartedAt, c.FinishedAt = s.openAt, s.lastEnd
	c.WallSec = s.lastEnd.Sub(s.openAt).Seconds() // on the monotonic clock
	c.WindowSec = s.closeAt.Sub(s.openAt).Seconds()
	c.StartedAt, c.FinishedAt = c.StartedAt.UTC(), c.FinishedAt.UTC()
	c.Rounds = s.sent[0]
	for _, n := range s.sent {
		c.Rounds = min(c.Rounds, n)
	}
	c.MaxInFlight = int(s.maxInFlight.Load())
	summarize(c, s.recs)
}

// camera runs camera ci: its warm-up, its ramp, then requests until its
// last.
func (s *sustainedLevel) camera(ctx context.Context, ci int) {
	for w := 0; w < s.warm && ctx.Err() == nil; w++ {
		s.send(ctx, ci, s.r.segments(s.wpics, ci*s.warm+w, s.pc.Images), false)
	}
	if ctx.Err() != nil {
		return
	}
	s.send(ctx, ci, s.segments(s.number()), false)
	s.ramped1()
	for ctx.Err() == nil {
		role, num, slot := s.role(ci)
		rec := s.send(ctx, ci, s.segments(num), role == roleLast)
		switch role {
		case roleMeasured:
			s.keep(slot, rec)
		case roleLast:
			return
		}
	}
}

// number is the next request's number after the warm-up.
func (s *sustainedLevel) number() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.next++
	s.discarded++
	return s.next - 1
}

// segments is the body of request number num.
func (s *sustainedLevel) segments(num int) []string {
	return s.r.segments(s.pics, num, s.pc.Images)
}

// ramped1 notes that a camera's ramp has ended, and opens the window
// after the last.
func (s *sustainedLevel) ramped1() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ramped++
	if s.ramped == len(s.cams) {
		s.opening()
		s.open, s.openAt = true, time.Now()
	}
}

// role decides what camera ci's next request is for, and numbers it;
// slot is a measured request's place among the records.
func (s *sustainedLevel) role(ci int) (role sendRole, num, slot int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	num = s.next
	s.next++
	switch {
	case !s.open:
		s.discarded++
		return roleDrift, num, 0
	case s.closed:
		return roleLast, num, 0
	}
	slot = len(s.recs)
	s.recs = append(s.recs, protocol.RequestRecord{})
	s.sent[ci]++
	if s.sent[ci] == s.rounds {
		s.short--
		if s.short == 0 {
			s.closed, s.closeAt = true, time.Now()
		}
	}
	return roleMeasured, num, slot
}

// send sends one request of camera ci and returns its record, Start
// counted from the window's opening (0 before it).
func (s *sustainedLevel) send(ctx context.Context, ci int, segs []string, last bool) protocol.RequestRecord {
	cam := s.cams[ci]
	seq := int(s.seq.Add(1) - 1)
	cam.loop = appendOpenLoopField(cam.loop[:0], s.id, seq, len(s.cams), last)
	rec := protocol.RequestRecord{Camera: ci, Images: s.pc.Images}
	now := s.inFlight.Add(1)
	for m := s.maxInFlight.Load(); now > m && !s.maxInFlight.CompareAndSwap(m, now); m = s.maxInFlight.Load() {
	}
	s.mu.Lock()
	if s.open {
		rec.Start = time.Since(s.openAt).Seconds()
	}
	s.mu.Unlock()
	s.r.send(ctx, cam, segs, &rec)
	s.inFlight.Add(-1)
	return rec
}

// keep records a measured answer in its slot.
func (s *sustainedLevel) keep(slot int, rec protocol.RequestRecord) {
	s.mu.Lock()
	rec.Seq = slot
	s.recs[slot] = rec
	s.lastEnd = time.Now()
	if rec.Error == "" {
		s.done++
		s.ttftSum += rec.TTFT
	} else {
		s.failed++
	}
	p := Progress{Done: s.done, Failed: s.failed, Total: max(s.pc.Requests, len(s.recs)), InFlight: int(s.inFlight.Load())}
	if s.done > 0 {
		p.MeanTTFT = s.ttftSum / float64(s.done)
	}
	s.mu.Unlock()
	s.onReq(rec, p)
}
