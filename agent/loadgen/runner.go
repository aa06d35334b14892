package loadgen

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// runner holds what stays the same across the combinations of one run:
// the prebuilt request layout and the cameras with their connections.
type runner struct {
	t       Target
	w       protocol.Workload
	imgs    Images
	ep      *endpoint
	parts   bodyParts
	timeout time.Duration
	cams    []*camera
	// inFlight is the combination's Hooks.InFlight.
	inFlight func(delta int)
	// noStream says requests ask for the answer in one piece (a profile
	// without streaming): it is read whole (nostream.go).
	noStream bool
}

func newRunner(t Target, w protocol.Workload, imgs Images) (*runner, error) {
	ep, err := newEndpoint(strings.TrimRight(t.BaseURL, "/"), t.APIKey)
	if err != nil {
		return nil, fmt.Errorf("loadgen: %w", err)
	}
	if t.Model == "" {
		return nil, fmt.Errorf("loadgen: the model name is empty")
	}
	parts, err := buildBodyParts(t, w)
	if err != nil {
		return nil, fmt.Errorf("loadgen: %w", err)
	}
	return &runner{t: t, w: w, imgs: imgs, ep: ep, parts: parts, timeout: requestTimeout(w)}, nil
}

// unique is whether requests carry perturbed pictures. The caller decides
// for an engine when the workload does not say (measure does); here unset
// is the fixed set.
func (r *runner) unique() bool { return r.w.UniqueImages != nil && *r.w.UniqueImages }

func (r *runner) close() {
	for _, c := range r.cams {
		c.close()
	}
}

// pictures gives the data URL of image j of request r, as head + tail: a
// unique picture's head is its own (its first bytes, where it differs),
// its tail shared with every copy of the picture, so that a request's
// picture costs no copy of the whole; a plain picture is all head.
type pictures func(req, j int) (head, tail string)

// picturesFor gives the pictures of a phase: request r carries pictures
// (first + r*images + j) mod Len, prepared before the phase is timed, or
// in unique mode its own perturbed copies of pictures r*images + j (the
// seed alone keeps them apart from another phase's), each made from its
// prepared picture as its request is built (a few hundred bytes of its
// own, the rest shared), before the request is timed.
func (r *runner) picturesFor(size string, images, requests int, unique bool, seed uint64, first int) (pictures, error) {
	if unique {
		// The first call prepares the size; later ones cannot fail.
		if _, _, err := r.imgs.UniquePicture(size, 0, seed); err != nil {
			return nil, fmt.Errorf("unique %s images: %w", size, err)
		}
		return func(req, j int) (string, string) {
			head, tail, _ := r.imgs.UniquePicture(size, req*images+j, seed)
			return head, tail
		}, nil
	}
	n := r.imgs.Len()
	urls := make([]string, n)
	for i := range urls {
		u, err := r.imgs.DataURL(size, i)
		if err != nil {
			return nil, fmt.Errorf("%s image %d: %w", size, i, err)
		}
		urls[i] = jsonSafe(u)
	}
	return func(req, j int) (string, string) { return urls[(first+req*images+j)%n], "" }, nil
}

// warmupFirst is the picture the warm-up starts at when every phase cycles
// through the same set. An engine keeps a multimodal cache even with prefix
// caching off (vLLM's mm cache), so a warm-up that sent the measured
// requests' first pictures would flatter them. The warm-up therefore takes
// the pictures at the end of the cycle, ending just before picture 0 where
// the measurement starts: measured and warm-up pictures are disjoint
// whenever the set holds both, and otherwise the warm-up still ends as far
// as possible from the first measured requests.
func warmupFirst(setLen, images, warm int) int {
	if setLen < 1 {
		return 0
	}
	return (setLen - (images*warm)%setLen) % setLen
}

func (r *runner) segments(pics pictures, req, images int) []string {
	segs := make([]string, 0, 3*images+1)
	segs = append(segs, r.parts.prefix)
	for j := 0; j < images; j++ {
		if j > 0 {
			segs = append(segs, r.parts.sep)
		}
		head, tail := pics(req, j)
		segs = append(segs, head)
		if tail != "" {
			segs = append(segs, tail)
		}
	}
	return append(segs, r.parts.suffix)
}

func randomSeed() uint64 {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return binary.LittleEndian.Uint64(b[:])
}

// combo measures one combination: warm-up, then the closed loop, or on a
// frame clock when the combination is paced (paced.go), or with cameras
// that keep sending when it is sustained (sustained.go).
func (r *runner) combo(ctx context.Context, idx, n int, pc protocol.PlannedCombo, h Hooks) (protocol.Combination, error) {
	size, err := protocol.LookupImageSize(pc.Size)
	if err != nil {
		return protocol.Combination{}, fmt.Errorf("loadgen: %s: %w", pc.ComboKey, err)
	}
	if pc.Cameras < 1 || pc.Images < 1 || pc.Requests < 1 {
		return protocol.Combination{}, fmt.Errorf("loadgen: %s: cameras, images and requests must be at least 1", pc.ComboKey)
	}
	r.inFlight = h.InFlight
	cams := r.cameras(pc.Cameras)
	c := protocol.Combination{ComboKey: pc.ComboKey, Width: size.Width, Height: size.Height}
	if pc.Paced() {
		return r.pacedCombo(ctx, idx, n, pc, size.Name, cams, c, h)
	}
	if pc.Sustained() {
		return r.sustainedCombo(ctx, idx, n, pc, size.Name, cams, c, h)
	}
	warm := r.w.WarmupRequests * pc.Cameras
	pics, wpics, err := r.comboPictures(size.Name, pc.Images, pc.Requests, warm)
	if err != nil {
		return c, fmt.Errorf("loadgen: %s: %w", pc.ComboKey, err)
	}
	if wpics != nil {
		if h.ComboStart != nil {
			h.ComboStart(idx, n, pc, true)
		}
		r.loop(ctx, cams, pc, warm, wpics, nil, nil, nil)
		c.Warmup = warm
		if err := ctx.Err(); err != nil {
			return c, fmt.Errorf("loadgen: %s warm-up: %w", pc.ComboKey, err)
		}
	}
	if h.ComboStart != nil {
		h.ComboStart(idx, n, pc, false)
	}
	recs := make([]protocol.RequestRecord, pc.Requests)
	c.StartedAt = time.Now()
	var maxInFlight atomic.Int64
	r.loop(ctx, cams, pc, pc.Requests, pics, recs, func(rec protocol.RequestRecord, p Progress) {
		if h.Request != nil {
			h.Request(pc.ComboKey, rec, p)
		}
	}, &maxInFlight)
	c.FinishedAt = time.Now()
	if err := ctx.Err(); err != nil {
		return c, fmt.Errorf("loadgen: %s: %w", pc.ComboKey, err)
	}
	c.WallSec = c.FinishedAt.Sub(c.StartedAt).Seconds() // on the monotonic clock
	c.StartedAt, c.FinishedAt = c.StartedAt.UTC(), c.FinishedAt.UTC()
	c.MaxInFlight = int(maxInFlight.Load())
	summarize(&c, recs)
	return c, nil
}

// comboPictures prepares the pictures of a combination's measured
// requests and of its warm-up (nil when it has none), before anything is
// timed: the measured ones first, so that no image work sits between
// warm-up and measurement (where an engine could also drop the idle
// keep-alive connections).
func (r *runner) comboPictures(size string, images, measured, warm int) (pics, wpics pictures, err error) {
	// The seed differs on every run so that an engine left running between
	// runs cannot recognise last run's perturbed frames either.
	seed := randomSeed()
	pics, err = r.picturesFor(size, images, measured, r.unique(), seed, 0)
	if err != nil || warm < 1 {
		return pics, nil, err
	}
	wpics, err = r.picturesFor(size, images, warm, r.unique(), seed^0x9e3779b97f4a7c15,
		warmupFirst(r.imgs.Len(), images, warm))
	if err != nil {
		return nil, nil, fmt.Errorf("warm-up: %w", err)
	}
	return pics, wpics, nil
}
