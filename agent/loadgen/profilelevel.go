package loadgen

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// profileLevel sends the requests of one length and resolution.
type profileLevel struct {
	p    *profiler
	lp   protocol.LengthPair
	res  protocol.Resolution
	cal  calibration
	body profileBody
}

// measure measures one concurrency level: a closed loop of key.Cameras
// workers until RequestsPerLevel requests (at least one per worker) have
// been sent.
func (lv *profileLevel) measure(ctx context.Context, key protocol.ComboKey, known int) (protocol.Combination, error) {
	p := lv.p
	total := max(p.w.RequestsPerLevel, key.Cameras, 1)
	pc := protocol.PlannedCombo{ComboKey: key, Requests: total}
	if p.h.ComboStart != nil {
		p.h.ComboStart(p.combos, known, pc, false)
	}
	c := protocol.Combination{ComboKey: key, Width: lv.res.Width, Height: lv.res.Height}
	recs := make([]protocol.RequestRecord, total)
	var maxInFlight atomic.Int64
	c.StartedAt = time.Now()
	lv.run(ctx, key.Cameras, total, recs, func(rec protocol.RequestRecord, pr Progress) {
		if p.h.Request != nil {
			p.h.Request(key, rec, pr)
		}
	}, &maxInFlight)
	c.FinishedAt = time.Now()
	if err := ctx.Err(); err != nil {
		return c, fmt.Errorf("loadgen: %s: %w", key, err)
	}
	c.StartedAt, c.FinishedAt = c.StartedAt.UTC(), c.FinishedAt.UTC()
	c.MaxInFlight = int(maxInFlight.Load())
	for i := range recs {
		recs[i].ISL = lv.lp.ISL
	}
	fig := profileFigures(recs, lv.lp.OSL, !p.w.NoStream)
	c.WallSec = fig.windowSec
	summarize(&c, recs)
	if p.w.NoStream {
		// An answer in one piece has no first token: a TTFT of its own
		// would be its latency, or a zero that flatters it.
		c.TTFT, c.Tail = protocol.Stats{}, nil
	}
	c.Profile = lv.profile(key.Cameras, fig.ProfileLevel)
	return c, nil
}

// profile is the level's record: its figures, with what it was measured
// with.
func (lv *profileLevel) profile(concurrency int, fig protocol.ProfileLevel) *protocol.ProfileLevel {
	p := lv.p
	fig.LengthPair, fig.Resolution = lv.lp, lv.res
	fig.ImageFormat, fig.Concurrency, fig.Stream = p.w.ImageFormat, concurrency, !p.w.NoStream
	fig.ImageTokens, fig.TextTokensEstimated = lv.cal.imageTokens, lv.cal.estimated
	if p.dropped.Load() {
		fig.SwitchesDropped = append([]string(nil), p.dropNames...)
	} else {
		fig.ForcedBy = append([]string(nil), lv.body.forcedBy...)
	}
	return &fig
}

// run sends total requests from concurrency workers, back to back; recs
// nil is a warm-up, its records thrown away.
func (lv *profileLevel) run(ctx context.Context, concurrency, total int, recs []protocol.RequestRecord,
	onReq func(protocol.RequestRecord, Progress), maxInFlight *atomic.Int64) {
	r := lv.p.r
	seed := randomSeed()
	build := func(i int) []string { return lv.segments(lv.prefix(), lv.cal.words, seed, i) }
	r.closedLoop(ctx, r.cameras(concurrency), lv.p.w.ImagesPerRequest, total, build, lv.send, recs, onReq, maxInFlight)
}

// prefix is the requests' fields: with the switches until the server
// refused them.
func (lv *profileLevel) prefix() string {
	if lv.p.dropped.Load() {
		return lv.body.withoutSwitches
	}
	return lv.body.withSwitches
}

// segments lays out request i of a phase with seed: its text of words
// words (the prompt when the length has no ISL) and its own pictures.
func (lv *profileLevel) segments(prefix string, words int, seed uint64, i int) []string {
	p := lv.p
	text := p.spec.Prompt
	if lv.lp.ISL > 0 {
		text = textOf(p.vocab, words, seed^uint64(i)*0x9e3779b97f4a7c15)
	}
	pics := make([][2]string, p.w.ImagesPerRequest)
	for j := range pics {
		// The pictures were prepared by the calibration: this cannot fail.
		pics[j][0], pics[j][1], _ = p.imgs.ProfilePicture(lv.res, p.w.ImageFormat, i*len(pics)+j, seed)
	}
	return profileSegments(prefix, text, pics)
}

// send sends a request; one that the server refuses (400) while it
// carries the forced-length switches is sent again without them, and if
// that is answered, the run goes on without them.
func (lv *profileLevel) send(ctx context.Context, cam *camera, _ int, segs []string, rec *protocol.RequestRecord) {
	p := lv.p
	p.r.send(ctx, cam, segs, rec)
	if !strings.HasPrefix(rec.Error, "HTTP 400") || segs[0] != lv.body.withSwitches ||
		lv.body.withSwitches == lv.body.withoutSwitches || ctx.Err() != nil {
		return
	}
	refused := rec.Error
	retry := append([]string{lv.body.withoutSwitches}, segs[1:]...)
	*rec = protocol.RequestRecord{Camera: rec.Camera, Seq: rec.Seq, Images: rec.Images, Start: rec.Start + rec.E2E}
	p.r.send(ctx, cam, retry, rec)
	if rec.Error == "" {
		p.dropSwitches(lv.body.forcedBy, refused)
	}
}

// dropSwitches makes the rest of the run go without the switches the
// server refused, and says so once.
func (p *profiler) dropSwitches(names []string, refused string) {
	p.dropOnce.Do(func() {
		p.dropNames = append([]string(nil), names...)
		p.dropped.Store(true)
		if p.spec.Warn != nil {
			p.spec.Warn(fmt.Sprintf("the server refused the forced-length switches %s (%s) and answered without them: "+
				"the answers' length is not forced for the rest of the run", strings.Join(names, ", "), refused))
		}
	})
}
