package simengine

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// Sweep describes a closed-loop measurement as the seed's method (and the
// agent's load generator) runs it: all cameras send Warmup discarded
// requests each, and once every one of them has ended, the cameras share
// Requests measured ones, each sending its next as soon as its previous
// answer has ended.
type Sweep struct {
	Size      string
	Images    int
	Cameras   int
	Requests  int
	Warmup    int
	MaxTokens int
	// Gap is the most simulated seconds a client takes between an answer's
	// end and its next request (drawn uniformly per request); it is what
	// desynchronises real cameras. 0 means defaultGap.
	Gap float64
	// Sustained runs the level as cameras that keep sending
	// (protocol.LoadSustained, runOpenLoop): no barrier after the
	// warm-up, the requests sent once every camera's ramp ended measured,
	// at least protocol.SustainedRounds per camera.
	Sustained bool
}

// SweepResult holds the means of the measured requests, in simulated seconds.
type SweepResult struct {
	TTFT float64
	TPS  float64
}

// defaultGap is a real client's turnaround on a real device: well under a
// millisecond of reading the last chunk and writing the next request.
const defaultGap = 0.0005

// Simulate runs a sweep through the profile's model in virtual time, with
// the given contention: deterministic for a seed and instant, the reference
// that the calibration test and FitContention use.
func Simulate(p Profile, contention float64, sw Sweep, seed uint64) (SweepResult, error) {
	return simulate(p, knobsFor(p), contention, sw, seed)
}

func simulate(p Profile, k knobs, contention float64, sw Sweep, seed uint64) (SweepResult, error) {
	size, err := protocol.LookupImageSize(sw.Size)
	if err != nil {
		return SweepResult{}, err
	}
	if sw.Cameras < 1 || sw.Requests < 1 || sw.Images < 1 {
		return SweepResult{}, fmt.Errorf("simulate: cameras, requests and images must be at least 1")
	}
	if sw.MaxTokens <= 0 {
		sw.MaxTokens = defaultMaxTokens
	}
	if sw.Gap <= 0 {
		sw.Gap = defaultGap
	}
	pixels := make([]int, sw.Images)
	for i := range pixels {
		pixels[i] = size.Width * size.Height
	}
	m := newModel(p, contention, seed)
	m.k = k
	gaps := newGapRand(seed)
	if sw.Sustained {
		done, err := runOpenLoop(m, gaps, sw, pixels)
		if err != nil {
			return SweepResult{}, fmt.Errorf("simulate: %w", err)
		}
		return meansOf(done), nil
	}
	if sw.Warmup > 0 {
		if _, err := runLoop(m, gaps, sw, pixels, sw.Warmup*sw.Cameras); err != nil {
			return SweepResult{}, fmt.Errorf("simulate: warm-up: %w", err)
		}
	}
	done, err := runLoop(m, gaps, sw, pixels, sw.Requests)
	if err != nil {
		return SweepResult{}, fmt.Errorf("simulate: %w", err)
	}
	return meansOf(done), nil
}

// meansOf is the mean TTFT and TPS of the requests done.
func meansOf(done []*job) SweepResult {
	var r SweepResult
	for _, j := range done {
		r.TTFT += j.firstAt - j.arrive
		if j.tokens > 1 && j.doneAt > j.firstAt {
			r.TPS += float64(j.tokens-1) / (j.doneAt - j.firstAt)
		}
	}
	r.TTFT /= float64(len(done))
	r.TPS /= float64(len(done))
	return r
}

// runLoop runs total requests through m from its current time, the
// cameras all starting together (each after its own client gap), and
// returns them once every one has ended.
func runLoop(m *model, gaps *rand.Rand, sw Sweep, pixels []int, total int) ([]*job, error) {
	gap := func() float64 { return sw.Gap * gaps.Float64() }
	// due[c] is when camera c sends its next request; +Inf while one is in
	// flight or when it has nothing left to send.
	due := make([]float64, sw.Cameras)
	for c := range due {
		due[c] = m.now + gap()
	}
	owner := map[*job]int{}
	var done []*job
	sent := 0
	for len(done) < total {
		t := m.nextEvent(false)
		for _, d := range due {
			t = math.Min(t, d)
		}
		if math.IsInf(t, 1) {
			return nil, fmt.Errorf("model stalled with %d requests in flight", len(owner))
		}
		var finished []*job
		m.advance(t, func(j *job) {
			if j.phase == phaseDone {
				finished = append(finished, j)
			}
		})
		for _, j := range finished {
			c := owner[j]
			delete(owner, j)
			done = append(done, j)
			due[c] = m.now + gap()
		}
		for c, d := range due {
			if d > m.now {
				continue
			}
			due[c] = math.Inf(1)
			if sent < total {
				sent++
				owner[m.submit(pixels, sw.MaxTokens)] = c
			}
		}
	}
	return done, nil
}

// defaultMaxTokens is the method's answer length and the engines' default here.
const defaultMaxTokens = 128

// calibrationRuns are the (seed, client gap) pairs a camera level is
// simulated with: real devices' sub-millisecond client turnaround, and the
// tens of simulated milliseconds that the same turnaround becomes on a
// simulated server sped up 40 times. How far apart they land says how
// much a real run's noise can move a level.
func calibrationRuns() []struct {
	seed uint64
	gap  float64
} {
	return []struct {
		seed uint64
		gap  float64
	}{{1, defaultGap}, {2, defaultGap}, {3, 0.02}, {4, 0.04}, {5, 0.08}, {6, 0.12}}
}

// calibrationSeed fixes the jitter of the single-camera calibration runs.
const calibrationSeed = 1

// levelStats runs the seed's sweep at a camera level (720p, one image)
// once per calibrationRuns and returns the mean, lowest and highest TTFT.
func levelStats(p Profile, contention float64, cams int) (mean, lo, hi float64) {
	runs := calibrationRuns()
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, run := range runs {
		r, err := Simulate(p, contention, Sweep{Size: "720p", Images: 1, Cameras: cams, Requests: p.RequestsPerLevel(), Warmup: 1, Gap: run.gap}, run.seed)
		if err != nil {
			return math.Inf(1), math.Inf(1), math.Inf(1)
		}
		mean += r.TTFT
		lo, hi = math.Min(lo, r.TTFT), math.Max(hi, r.TTFT)
	}
	return mean / float64(len(runs)), lo, hi
}

// levelTTFT is the mean of levelStats.
func levelTTFT(p Profile, contention float64, cams int) float64 {
	m, _, _ := levelStats(p, contention, cams)
	return m
}

// worstTTFT is the run of levelStats least favourable to a constraint: the
// highest TTFT where it must stay within its target, the lowest where it
// must not.
func worstTTFT(p Profile, contention float64, c constraint) float64 {
	_, lo, hi := levelStats(p, contention, c.cams)
	if c.le {
		return hi
	}
	return lo
}

// MaxCameras reads Max Cameras the way the explorer does: the highest
// measured level whose mean TTFT is within target.
func MaxCameras(levels []int, ttft func(cams int) float64, target float64) int {
	best := 0
	for _, l := range levels {
		if ttft(l) <= target {
			best = l
		}
	}
	return best
}

type constraint struct {
	cams   int
	target float64
	le     bool // TTFT ≤ target, else TTFT > target
}

func (p Profile) constraints() []constraint {
	var out []constraint
	for _, t := range p.Targets {
		for _, l := range p.Levels() {
			if l <= t.Max {
				out = append(out, constraint{cams: l, target: t.TargetS, le: true})
			} else if !t.Plus {
				out = append(out, constraint{cams: l, target: t.TargetS, le: false})
				break
			}
		}
	}
	return out
}

// contentionRange bounds the fitted contention: at the top a decoding
// stream takes at most three quarters of the device from a prefill (which
// keeps going, if slowly: no request waits for a whole answer), at the
// bottom a prefill still leaves the streams a little of it (no answer stops
// while images are read).
func contentionRange() (lo, hi float64) { return 0.05, 3 }

// FitContention finds the contention that reproduces the profile's Max
// Cameras readings in every calibration run with the widest margin, or
// hits its published load points. ok is false when no contention
// reproduces the readings.
//
// A closed loop is not monotonic in the contention (a little of it keeps
// the cameras apart, much of it slows them all), so the range is scanned on
// a logarithmic grid rather than bisected.
func FitContention(p Profile) (x float64, ok bool, why string) {
	f := newContentionFit(p)
	if len(f.fits) == 0 {
		return f.nearestMiss()
	}
	if len(p.LoadPoints) > 0 {
		lp := p.LoadPoints[0]
		return f.closest(lp.Cameras, lp.TTFT), true, fmt.Sprintf("load point %d cameras %.2fs", lp.Cameras, lp.TTFT)
	}
	le, gt := f.deciding()
	switch {
	case len(gt) == 0 && len(le) > 0 && p.Targets[0].Plus:
		return f.plus()
	case len(gt) == 0:
		return f.evenShare(), true, "unconstrained"
	}
	return f.balance(le, gt)
}

// fitSteps is the number of points on FitContention's grid.
const fitSteps = 48

// contentionFit is one profile's scan for a contention: the logarithmic
// grid over contentionRange, the constraints the profile's Max Cameras
// readings impose, and the grid points that meet them all, which every
// way of choosing among them starts from.
type contentionFit struct {
	p      Profile
	lo, hi float64
	grid   []float64
	cons   []constraint
	fits   []float64
}

func newContentionFit(p Profile) *contentionFit {
	f := &contentionFit{p: p, cons: p.constraints()}
	f.lo, f.hi = contentionRange()
	f.grid = make([]float64, fitSteps)
	for i := range f.grid {
		f.grid[i] = f.lo * math.Pow(f.hi/f.lo, float64(i)/float64(fitSteps-1))
	}
	for _, x := range f.grid {
		if f.margin(x, f.cons) >= 0 {
			f.fits = append(f.fits, x)
		}
	}
	return f
}

// margin is the worst run's relative distance to the targets of cs, on the
// right side (negative on the wrong one).
func (f *contentionFit) margin(x float64, cs []constraint) float64 {
	m := math.Inf(1)
	for _, c := range cs {
		v := worstTTFT(f.p, x, c)
		if c.le {
			m = math.Min(m, c.target/v-1)
		} else {
			m = math.Min(m, v/c.target-1)
		}
	}
	return m
}

// nearestMiss reports the grid point that comes closest when none fits.
func (f *contentionFit) nearestMiss() (x float64, ok bool, why string) {
	best := f.grid[0]
	for _, x := range f.grid {
		if f.margin(x, f.cons) > f.margin(best, f.cons) {
			best = x
		}
	}
	return best, false, fmt.Sprintf("no contention in [%g, %g] fits: at best %.1f%% off", f.lo, f.hi, -100*f.margin(best, f.cons))
}

// closest picks the fitting contention whose mean TTFT at a level is
// nearest a wanted figure, refined between grid points.
func (f *contentionFit) closest(cams int, want float64) float64 {
	p, lo, hi := f.p, f.lo, f.hi
	best := f.fits[0]
	for _, x := range f.fits {
		if math.Abs(levelTTFT(p, x, cams)-want) < math.Abs(levelTTFT(p, best, cams)-want) {
			best = x
		}
	}
	step := math.Pow(hi/lo, 1/float64(fitSteps-1))
	a, b := math.Max(lo, best/step), math.Min(hi, best*step)
	if (levelTTFT(p, a, cams) <= want) == (levelTTFT(p, b, cams) <= want) {
		return best
	}
	x := bisect(a, b, func(x float64) bool { return levelTTFT(p, x, cams) <= want })
	if f.margin(x, f.cons) < 0 {
		return best
	}
	return x
}

// deciding splits the constraints into those a level must meet and those
// it must miss, leaving out the single camera's: its margin does not move
// with contention.
func (f *contentionFit) deciding() (le, gt []constraint) {
	for _, c := range f.cons {
		switch {
		case c.cams == 1:
		case c.le:
			le = append(le, c)
		default:
			gt = append(gt, c)
		}
	}
	return le, gt
}

// plus fits a profile met at every level measured: it aims the top level
// where the Qwen3-VL-4B RTX PRO 6000 sentence puts a 16-camera load (4.4×
// the single-camera TTFT under llama.cpp, 2.9× under vLLM), inside the
// target.
func (f *contentionFit) plus() (x float64, ok bool, why string) {
	p := f.p
	top := p.Levels()[len(p.Levels())-1]
	ratio := 2.9
	if p.Engine == EngineLlamaCpp {
		ratio = 4.4
	}
	want := math.Min(p.TTFT720*ratio, 0.8*p.Targets[0].TargetS)
	return f.closest(top, want), true, fmt.Sprintf("plus: %d cameras aimed at %.2fs", top, want)
}

// evenShare serves a profile where no level beyond one camera decides a
// reading (Max Cameras 0): any fitting contention reproduces it, so it
// takes the one closest to an even share of the device.
func (f *contentionFit) evenShare() float64 {
	x := f.fits[0]
	for _, c := range f.fits {
		if math.Abs(math.Log(c)) < math.Abs(math.Log(x)) {
			x = c
		}
	}
	return x
}

// balance evens out the margins of the passing and the failing levels, but
// asks no more than maxMargin of the failing one (more would bend the
// model's behaviour beyond the measured levels); among the contentions
// within half a point of the best balance, it takes the widest margins in
// sum.
func (f *contentionFit) balance(le, gt []constraint) (x float64, ok bool, why string) {
	const maxMargin = 0.25
	pass := func(x float64) float64 { return f.margin(x, le) }
	if len(le) == 0 {
		pass = func(float64) float64 { return maxMargin }
	}
	fail := func(x float64) float64 { return math.Min(maxMargin, f.margin(x, gt)) }
	best := math.Inf(-1)
	for _, x := range f.fits {
		best = math.Max(best, math.Min(pass(x), fail(x)))
	}
	x = math.NaN()
	for _, c := range f.fits {
		if math.Min(pass(c), fail(c)) >= best-0.005 && (math.IsNaN(x) || pass(c)+fail(c) > pass(x)+fail(x)+1e-9) {
			x = c
		}
	}
	if !math.IsNaN(x) {
		return x, true, fmt.Sprintf("worst-run margins %.1f%% pass (2+ cameras), %.1f%% fail", 100*f.margin(x, le), 100*f.margin(x, gt))
	}
	return f.fits[0], true, "unreachable"
}

// bisect returns the largest x in [lo, hi] where ok holds, ok true at lo and
// turning false once above some point.
func bisect(lo, hi float64, ok func(float64) bool) float64 {
	if ok(hi) {
		return hi
	}
	for range 40 {
		mid := (lo + hi) / 2
		if ok(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

// newGapRand draws the client gaps of a simulation.
func newGapRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x6a70)) }
