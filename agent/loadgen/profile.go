package loadgen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// ProfilePictures are a profile's pictures; *imageset.Set satisfies it.
type ProfilePictures interface {
	// ProfilePicture is picture i at res in format as a data URL, head +
	// tail, its pixels its own for each (i, seed) pair; once a size is
	// prepared it must cost little.
	ProfilePicture(res protocol.Resolution, format string, i int, seed uint64) (head, tail string, err error)
}

// ProfileSpec is a latency and throughput profile to measure.
type ProfileSpec struct {
	Workload protocol.ProfileWorkload
	// Prompt is the text of a length whose ISL is 0, sent as it is.
	Prompt string
	// RequestTimeout bounds one request; 0 for none.
	RequestTimeout time.Duration
	// ForcedLength is the engine's fields that make an answer n tokens
	// long (engine.RequestSwitches.ForcedLength); nil: it has none.
	ForcedLength func(n int) map[string]any
	// Warn hears, once a run, what its record should say: the forced
	// length switches a server refused.
	Warn func(msg string)
}

// profiler is one MeasureProfile in progress.
type profiler struct {
	r     *runner
	spec  ProfileSpec
	w     protocol.ProfileWorkload
	extra map[string]json.RawMessage
	imgs  ProfilePictures
	vocab []string
	h     Hooks
	// combos counts the levels measured so far.
	combos int

	// dropped says the server refused the switches: every request from
	// then on goes without them, named in dropNames.
	dropped   atomic.Bool
	dropOnce  sync.Once
	dropNames []string
}

// MeasureProfile measures the profile: for each length and resolution, in
// order, the calibration of the text's length (profilecalib.go), the
// warm-up, and the concurrency levels, listed or found by the automatic
// rule (protocol.ProfileAutoRule), each a closed loop. Each level goes to
// ComboDone as it is measured; each (length, resolution)'s levels, with
// the max-throughput point marked, to SeriesDone, or those measured
// before the series stopped, unmarked. It stops early only
// when ctx ends or a hook or a calibration fails, and then returns the
// levels measured so far with the error.
func MeasureProfile(ctx context.Context, t Target, spec ProfileSpec, imgs ProfilePictures, h Hooks) ([]protocol.Combination, error) {
	p, err := newProfiler(t, spec, imgs, h)
	if err != nil {
		return nil, err
	}
	defer p.r.close()
	var out []protocol.Combination
	for _, lp := range p.w.Lengths {
		for _, res := range p.w.Resolutions {
			series, err := p.series(ctx, lp, res)
			out = append(out, series...)
			if err != nil {
				return out, err
			}
		}
	}
	return out, nil
}

func newProfiler(t Target, spec ProfileSpec, imgs ProfilePictures, h Hooks) (*profiler, error) {
	w := spec.Workload
	if len(w.Lengths) == 0 || len(w.Resolutions) == 0 {
		return nil, errors.New("loadgen: the profile has no lengths or no image sizes")
	}
	if w.ImagesPerRequest > 0 && imgs == nil {
		return nil, errors.New("loadgen: the profile sends images but has no pictures")
	}
	extra, err := extraBodyOf(w.ExtraBody)
	if err != nil {
		return nil, fmt.Errorf("loadgen: %w", err)
	}
	ep, err := newEndpoint(strings.TrimRight(t.BaseURL, "/"), t.APIKey)
	if err != nil {
		return nil, fmt.Errorf("loadgen: %w", err)
	}
	if t.Model == "" {
		return nil, errors.New("loadgen: the model name is empty")
	}
	r := &runner{t: t, ep: ep, timeout: spec.RequestTimeout, noStream: w.NoStream, inFlight: h.InFlight}
	return &profiler{r: r, spec: spec, w: w, extra: extra, imgs: imgs, vocab: strings.Fields(profileVocabulary), h: h}, nil
}

// series measures one length and resolution: calibration, warm-up, levels.
func (p *profiler) series(ctx context.Context, lp protocol.LengthPair, res protocol.Resolution) ([]protocol.Combination, error) {
	key := protocol.ComboKey{Size: res.String(), Images: p.w.ImagesPerRequest, ISL: lp.ISL, OSL: lp.OSL}
	levels, auto := p.levels()
	key.Cameras = levels[0]
	if p.h.ComboStart != nil {
		p.h.ComboStart(p.combos, p.known(len(levels)), protocol.PlannedCombo{ComboKey: key, Requests: p.w.WarmupRequests}, true)
	}
	cal, err := p.calibrate(ctx, lp, res)
	if err != nil {
		return nil, fmt.Errorf("loadgen: %s: %w", key, err)
	}
	body, err := buildProfileBody(p.r.t, p.extra, lp.OSL, !p.w.NoStream, p.spec.ForcedLength)
	if err != nil {
		return nil, fmt.Errorf("loadgen: %s: %w", key, err)
	}
	lv := &profileLevel{p: p, lp: lp, res: res, cal: cal, body: body}
	if p.w.WarmupRequests > 0 {
		lv.run(ctx, levels[0], p.w.WarmupRequests, nil, nil, nil)
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("loadgen: %s warm-up: %w", key, err)
		}
	}
	var out []protocol.Combination
	for i := 0; i < len(levels); i++ {
		key.Cameras = levels[i]
		c, err := lv.measure(ctx, key, p.known(len(levels)-i))
		if err == nil && p.h.ComboDone != nil {
			if err = p.h.ComboDone(p.combos, &c); err != nil {
				err = fmt.Errorf("loadgen: after %s: %w", key, err)
			}
		}
		if err != nil {
			return out, errors.Join(err, p.handOn(out, key, false))
		}
		p.combos++
		out = append(out, c)
		if next, ok := nextAutoLevel(out, p.w.AutoCeiling); auto && ok {
			levels = append(levels, next)
		}
	}
	return out, p.handOn(out, key, true)
}

// handOn hands a series' levels to SeriesDone: all of them, with the
// max-throughput point marked, or those measured before the series
// stopped, unmarked (the rule never saw its end), as the camera ladders'
// levels are handed on as they come.
func (p *profiler) handOn(levels []protocol.Combination, key protocol.ComboKey, complete bool) error {
	if complete {
		markMaxThroughput(levels)
	}
	if len(levels) == 0 || p.h.SeriesDone == nil {
		return nil
	}
	if err := p.h.SeriesDone(levels); err != nil {
		return fmt.Errorf("loadgen: after %s: %w", key, err)
	}
	return nil
}

// levels are the concurrency levels to measure: the workload's, or with
// the automatic rule the first, 1, the rest chosen as they are measured.
func (p *profiler) levels() ([]int, bool) {
	if len(p.w.Concurrency) > 0 {
		return p.w.Concurrency, false
	}
	return []int{1}, true
}

// known is the levels known so far: those measured, the current one and
// ahead, the rest of this series and the later series' listed levels.
func (p *profiler) known(ahead int) int {
	per := len(p.w.Concurrency)
	if per == 0 {
		return p.combos + ahead
	}
	later := len(p.w.Lengths)*len(p.w.Resolutions) - p.combos/per - 1
	return p.combos + ahead + later*per
}
