// Package loadgen measures a vision-language model endpoint the way the
// published method (explorer/testdata/seed.txt) does: closed-loop cameras sending
// streamed chat completions with base64 images, timed from just before each
// request is written to its first real token.
package loadgen

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// Target is the OpenAI-compatible endpoint under measurement.
type Target struct {
	// BaseURL ends in /v1; requests go to BaseURL+"/chat/completions".
	BaseURL string
	Model   string
	// APIKey, when set, is sent as a Bearer token.
	APIKey string
	// ExtraBody is merged into every request body (e.g. "cache_prompt": false).
	ExtraBody map[string]any
	// Speedup is how many times faster than the device it stands for the
	// endpoint runs (a simulated engine; 0 or 1: real time). A frame clock
	// ticks that many times faster, so that its frames meet the answers as
	// they would on the device; the combination keeps the device's
	// interval in its key.
	Speedup float64
	// Simulated says the endpoint is the simulator (agent/simengine),
	// which keeps a frame clock on its own clock (FrameHeader): a camera
	// whose answer runs at a tick waits for it and takes the tick the
	// simulator names next, instead of dropping by the wall clock.
	Simulated bool
}

// Images is the picture set requests carry; *imageset.Set satisfies it.
type Images interface {
	Name() string
	Hash() string
	Len() int
	// DataURL is picture i mod Len at size as a base64 JPEG data URL.
	DataURL(size string, i int) (string, error)
	// UniquePicture is picture i mod Len at size as a data URL, head +
	// tail, its pixels made to differ from the plain picture's and from
	// every other (i, seed) pair's. Once a size is prepared it must cost
	// little (a tail shared by the picture's copies): it runs on a
	// camera's goroutine just before its request is sent.
	UniquePicture(size string, i int, seed uint64) (head, tail string, err error)
}

// Hooks are optional callbacks. They run on the measuring goroutines
// (Request concurrently from several cameras), so they must be cheap.
type Hooks struct {
	ComboStart func(idx, n int, pc protocol.PlannedCombo, warmup bool)
	Request    func(k protocol.ComboKey, rec protocol.RequestRecord, p Progress)
	// ComboDone may attach telemetry before the combination is kept; an
	// error aborts Measure.
	ComboDone func(idx int, c *protocol.Combination) error
	// InFlight hears each request as it is sent (+1) and as it ends (-1),
	// warm-ups included: how busy the engine is kept, which a frame clock
	// leaves idle between answers.
	InFlight func(delta int)
	// SeriesDone hears a profile's levels of one length and resolution
	// (MeasureProfile) once the last is measured and the max-throughput
	// point marked; an error aborts MeasureProfile.
	SeriesDone func(levels []protocol.Combination) error
}

// Progress is a combination's state after a measured request.
type Progress struct {
	Done, Failed, Total, InFlight int
	// MeanTTFT is the mean TTFT in seconds of the requests completed so far.
	MeanTTFT float64
}

// ClientName names this client in result documents.
const ClientName = "vlmfleet-loadgen"

// ClientInfo says what measured: this client and the picture set.
func ClientInfo(imgs Images, version string) protocol.ClientInfo {
	ci := protocol.ClientInfo{Name: ClientName, Version: version, Go: runtime.Version()}
	if imgs != nil {
		ci.ImageSet, ci.ImageSetHash, ci.ImageCount = imgs.Name(), imgs.Hash(), imgs.Len()
	}
	return ci
}

// Measure runs w.Plan() in order, and with w.Search each ladder's search
// for the exact Max Cameras right after the ladder: for each combination a
// discarded warm-up (WarmupRequests per camera, all cameras at once), then
// the measured closed loop. A level is judged by w.Judgement once
// ComboDone has had it, on the time scale ComboDone leaves it on. A
// combination whose requests all fail is still returned with its failures
// counted. Measure stops early only when ctx ends or ComboDone fails, and
// then returns the combinations measured so far with the error. The n
// handed to ComboStart is the combinations known so far: the plan's and
// the search's levels chosen until then.
func Measure(ctx context.Context, t Target, w protocol.Workload, imgs Images, h Hooks) ([]protocol.Combination, error) {
	if imgs == nil || imgs.Len() == 0 {
		return nil, errors.New("loadgen: the image set is empty")
	}
	r, err := newRunner(t, w, imgs)
	if err != nil {
		return nil, err
	}
	defer r.close()
	sched := newSchedule(w)
	out := make([]protocol.Combination, 0, sched.total())
	for i := 0; ; i++ {
		pc, ok := sched.next()
		if !ok {
			return out, nil
		}
		if err := ctx.Err(); err != nil {
			return out, fmt.Errorf("loadgen: stopped before %s: %w", pc.ComboKey, err)
		}
		c, err := r.planned(ctx, i, sched.total(), pc, h)
		if err != nil {
			return out, err
		}
		if h.ComboDone != nil {
			if err := h.ComboDone(i, &c); err != nil {
				return out, fmt.Errorf("loadgen: after %s: %w", pc.ComboKey, err)
			}
		}
		sched.measured(pc, w.Judgement.Passes(c.Figures()))
		out = append(out, c)
	}
}

// MeasureCombo measures one planned combination on its own, warm-up included.
func MeasureCombo(ctx context.Context, t Target, w protocol.Workload, imgs Images, pc protocol.PlannedCombo, h Hooks) (protocol.Combination, error) {
	if imgs == nil || imgs.Len() == 0 {
		return protocol.Combination{}, errors.New("loadgen: the image set is empty")
	}
	r, err := newRunner(t, w, imgs)
	if err != nil {
		return protocol.Combination{}, err
	}
	defer r.close()
	return r.planned(ctx, 0, 1, pc, h)
}

// planned measures a planned combination, marked as found by search when
// a search chose it.
func (r *runner) planned(ctx context.Context, idx, n int, pc protocol.PlannedCombo, h Hooks) (protocol.Combination, error) {
	c, err := r.combo(ctx, idx, n, pc, h)
	c.Search = pc.Search
	return c, err
}

// requestTimeout is the workload's bound on one request, 0 for none.
func requestTimeout(w protocol.Workload) time.Duration {
	if w.RequestTimeoutSec <= 0 {
		return 0
	}
	return time.Duration(w.RequestTimeoutSec * float64(time.Second))
}
