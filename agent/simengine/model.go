package simengine

import (
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// The timing model is a fluid queue on one shared accelerator, in simulated
// seconds. A request first needs prefill work (reading the prompt and the
// images; seconds at full speed when it is alone), then writes its tokens.
//
//   - Prefill is served in arrival order to a batch of at most batchCap
//     requests at once, whose combined speed is 1+batchGain·(batch−1): vLLM
//     schedules every waiting prefill into its next steps (on a Jetson the
//     GPU is already busy with one image, so batching gains little);
//     llama.cpp on a Jetson encodes images one slot at a time (batchCap 1:
//     first come, first served).
//   - Prefill and the streams being decoded share the device the way
//     continuous batching interleaves them: the B streams weigh
//     load = contention·(1+decodeK·(B−1)) against a prefill (contention
//     times the cost of their decoding step), so prefill runs at 1/(1+load)
//     of its speed and the streams at load/(1+load) of theirs while any
//     prefill runs. contention is the fitted per-profile knob that decides
//     Max Cameras, bounded (contentionRange) so that neither side ever
//     starves: a new request never waits for a whole answer, and an answer
//     never stops while images are read.
//   - Each stream writes TPS/(1+decodeK·(B−1)) tokens/s when no prefill runs.
//
// Single-camera figures come out exactly (no contention with one request in
// flight); the multi-camera ones emerge from the queue.

// knobs are the engine-and-device constants of the model (not fitted).
type knobs struct {
	batchCap  int
	batchGain float64
	decodeK   float64
	// batched switches to the data-center engine's schedule (batch.go):
	// a running set bounded by the KV cache, every request in it slowed
	// alike by the set's size; the other knobs do not apply.
	batched bool
}

func knobsFor(p Profile) knobs {
	if p.DC != nil {
		return knobs{batched: true}
	}
	jetson := isJetson(p.Device)
	if p.Engine == EngineVLLM {
		if jetson {
			return knobs{batchCap: 8, batchGain: 0.2, decodeK: 0.06}
		}
		return knobs{batchCap: 8, batchGain: 0.7, decodeK: 0.03}
	}
	if jetson {
		return knobs{batchCap: 1, batchGain: 0, decodeK: 0.12}
	}
	// On a discrete GPU the 16-camera figure of llama.cpp (1.09 s against
	// 0.25 s alone) needs slots prefilled together.
	return knobs{batchCap: 4, batchGain: 0.6, decodeK: 0.08}
}

// jitter is the relative spread of each request's prefill work and decode
// speed: small, so that a mean of 8 requests sits within 1% of the model.
const jitter = 0.015

// costModel turns a request's images into prefill seconds, fitted to the
// single-camera figures: TTFT = base + c720·Σ w_i·(pixels_i/pixels720)^sizeExp
// with w_1 = 1 and w_i = multiRatio for every further image.
type costModel struct {
	base, c720, multiRatio, sizeExp float64
}

const pixels720 = 1280 * 720

func (p Profile) costs() costModel {
	c := costModel{base: 0.08 * p.TTFT720}
	c.c720 = p.TTFT720 - c.base
	c.multiRatio = 1
	if p.MultiN > 1 && c.c720 > 0 {
		c.multiRatio = math.Max(0.05, (p.TTFTMulti-p.TTFT720)/(float64(p.MultiN-1)*c.c720))
	}
	if big, err := protocol.LookupImageSize(p.BigSize); err == nil && c.c720 > 0 {
		ratio := float64(big.Width*big.Height) / pixels720
		if v := (p.TTFTBig - c.base) / c.c720; v > 0 && ratio > 1 {
			c.sizeExp = math.Min(3, math.Max(0, math.Log(v)/math.Log(ratio)))
		}
	}
	return c
}

// prefill is the prefill work of a request with images of these pixel counts.
func (c costModel) prefill(pixels []int) float64 {
	w := c.base
	for i, px := range pixels {
		f := c.c720 * math.Pow(float64(px)/pixels720, c.sizeExp)
		if i > 0 {
			f *= c.multiRatio
		}
		w += f
	}
	return w
}

type phase int

const (
	phasePrefill phase = iota
	phaseDecode
	phaseDone
)

// job is one request inside the model.
type job struct {
	phase    phase
	arrive   float64
	work     float64 // prefill work left
	prefill  float64 // prefill work in total
	tokens   int     // tokens to write
	progress float64 // tokens written after the first
	speed    float64 // this stream's decode speed jitter
	firstAt  float64
	doneAt   float64
	pending  bool    // reserved, its prefill work not known yet
	credit   float64 // prefill work done while pending
	rate     float64 // current decode rate, set by rates()
	pRate    float64 // current prefill rate, set by rates()
	cost     jobCost // what the request's prompt and answer cost the device
	notify   func()
	// loop is the client's closed loop the request belongs to (nil: not
	// known), reservedAt when it arrived on the wall clock; see clock.go.
	loop       *loop
	reservedAt time.Time
	// lastOfCamera says the request is its camera's last of an open loop.
	lastOfCamera bool
	received     bool // its body is read; it is being parsed
	// frame is the frame of a frame clock the request carries (nil: none;
	// see frames.go), and nextTick the tick its camera takes next, known
	// once the request has ended.
	frame    *frameRef
	nextTick int
}

// due is how many tokens the job has written by the model's clock.
func (j *job) due() int {
	switch j.phase {
	case phasePrefill:
		return 0
	case phaseDone:
		return j.tokens
	}
	return min(j.tokens, 1+int(math.Floor(j.progress+1e-9)))
}

// model is the fluid queue. It is not safe for concurrent use: the server
// guards it with a mutex.
type model struct {
	k          knobs
	contention float64
	// price turns a request into its cost (Profile.jobCost).
	price    func(demand) jobCost
	rng      *rand.Rand
	now      float64
	prefillQ []*job
	decoding []*job
	// scheduled are requests that arrived before their time (frames
	// before their tick), by arrival time: each joins prefillQ when the
	// model reaches it.
	scheduled []*job
	// halt, set by advance's callback, ends advance after the event being
	// processed: the server's clock stops at an answer's end.
	halt bool
}

func newModel(p Profile, contention float64, seed uint64) *model {
	return &model{
		k: knobsFor(p), contention: contention, price: p.jobCost,
		rng: rand.New(rand.NewPCG(seed, 0x5eed5eed)),
	}
}

func (m *model) jitter() float64 { return 1 + jitter*(2*m.rng.Float64()-1) }

// submit adds a request at the model's current time.
func (m *model) submit(pixels []int, tokens int) *job {
	j := m.reserve()
	m.fill(j, pixels, tokens)
	return j
}

// reserve enters a request whose body is still being read and parsed: it
// holds its place in the prefill queue from the moment it arrived, and the
// prefill it is given meanwhile counts once fill says how much it needs. So
// the server's own reading and parsing (real milliseconds, many simulated
// ones when sped up) neither add to the modelled response time nor reorder
// requests that arrived together.
func (m *model) reserve() *job {
	j := &job{pending: true, arrive: m.now, tokens: 1, firstAt: -1, doneAt: -1}
	m.prefillQ = append(m.prefillQ, j)
	return j
}

// reserveAt enters a request, as reserve does, at simulated time at: now
// if that has passed, else when the model reaches it.
func (m *model) reserveAt(at float64) *job {
	if at <= m.now {
		return m.reserve()
	}
	j := &job{pending: true, arrive: at, tokens: 1, firstAt: -1, doneAt: -1}
	i := len(m.scheduled)
	for i > 0 && m.scheduled[i-1].arrive > at {
		i--
	}
	m.scheduled = slices.Insert(m.scheduled, i, j)
	return j
}

// admit moves the scheduled requests whose time has come into the prefill
// queue, reporting whether any came.
func (m *model) admit() bool {
	n := 0
	for n < len(m.scheduled) && m.scheduled[n].arrive <= m.now {
		n++
	}
	m.prefillQ = append(m.prefillQ, m.scheduled[:n]...)
	m.scheduled = m.scheduled[n:]
	return n > 0
}

// fill gives a reserved request its images and answer length.
func (m *model) fill(j *job, pixels []int, tokens int) {
	m.fillDemand(j, demand{pixels: pixels, tokens: tokens})
}

// fillDemand gives a reserved request what it asks of the device.
func (m *model) fillDemand(j *job, d demand) {
	j.cost = m.price(d)
	w := j.cost.work * m.jitter()
	j.pending = false
	j.prefill, j.tokens, j.speed = w, max(1, d.tokens), m.jitter()
	if j.credit < w || j.pRate <= 0 {
		j.work = w - j.credit
		return
	}
	// The server took longer to parse the request than the device to read
	// it (a loaded machine, a high speedup): the first token is late on the
	// wire, but the model's clock says when it was due, and the answer has
	// been written since.
	m.prefillQ = without(m.prefillQ, j)
	j.work = 0
	late := (j.credit - w) / j.pRate
	j.firstAt = max(j.arrive, m.now-late)
	if j.tokens <= 1 {
		j.phase, j.doneAt = phaseDone, m.now
		return
	}
	b := len(m.decoding) + 1
	rate := j.cost.tps * j.speed / (1 + m.k.decodeK*float64(b-1))
	j.progress = math.Min(float64(j.tokens-1)*(1-1e-9), (m.now-j.firstAt)*rate)
	j.phase = phaseDecode
	m.decoding = append(m.decoding, j)
}

// remove drops a request (its client went away).
func (m *model) remove(j *job) {
	m.prefillQ = without(m.prefillQ, j)
	m.decoding = without(m.decoding, j)
	m.scheduled = without(m.scheduled, j)
	j.phase = phaseDone
}

func without(s []*job, j *job) []*job {
	for i, x := range s {
		if x == j {
			return append(s[:i], s[i+1:]...)
		}
	}
	return s
}

// rates sets every job's current prefill and decode rate.
func (m *model) rates() {
	if m.k.batched {
		m.batchRates()
		return
	}
	b := len(m.decoding)
	load := m.decodeLoad(b)
	batch := min(len(m.prefillQ), m.k.batchCap)
	for i, j := range m.prefillQ {
		j.pRate = 0
		if i < batch {
			j.pRate = (1 + m.k.batchGain*float64(batch-1)) / (1 + load) / float64(batch)
		}
	}
	share := 1.0
	if batch > 0 {
		share = load / (1 + load)
	}
	for _, j := range m.decoding {
		j.rate = j.cost.tps * j.speed / (1 + m.k.decodeK*float64(b-1)) * share
	}
}

// decodeLoad is the weight of b decoding streams against prefill in the
// device's schedule: the contention times the cost of one decoding step of
// b streams relative to a step of one.
func (m *model) decodeLoad(b int) float64 {
	if b == 0 {
		return 0
	}
	return m.contention * (1 + m.k.decodeK*float64(b-1))
}

// nextEvent is the simulated time of the next prefill or stream completion,
// and with tokens also of the next token written; +Inf when idle.
func (m *model) nextEvent(tokens bool) float64 {
	m.rates()
	next := math.Inf(1)
	if len(m.scheduled) > 0 {
		next = m.scheduled[0].arrive
	}
	for _, j := range m.prefillQ {
		if j.pRate > 0 && !j.pending {
			next = math.Min(next, m.now+j.work/j.pRate)
		}
	}
	for _, j := range m.decoding {
		left := float64(j.tokens-1) - j.progress
		if tokens {
			left = math.Min(left, math.Floor(j.progress+1e-9)+1-j.progress)
		}
		next = math.Min(next, m.now+math.Max(0, left)/j.rate)
	}
	return next
}

// advance runs the model to simulated time t, calling changed for every job
// whose first token was written or that finished, at the exact model time.
func (m *model) advance(t float64, changed func(*job)) {
	const eps = 1e-9
	for m.now < t {
		next := math.Min(t, m.nextEvent(false))
		dt := next - m.now
		for _, j := range m.prefillQ {
			if j.pending {
				j.credit += j.pRate * dt
			} else {
				j.work -= j.pRate * dt
			}
		}
		for _, j := range m.decoding {
			j.progress += j.rate * dt
		}
		m.now = next
		admitted := m.admit()
		var still []*job
		var started []*job
		for _, j := range m.prefillQ {
			if !j.pending && j.pRate > 0 && j.work <= eps*math.Max(1, j.prefill) {
				j.work = 0
				j.firstAt = m.now
				started = append(started, j)
				continue
			}
			still = append(still, j)
		}
		m.prefillQ = still
		happened := len(started) > 0 || admitted
		var going []*job
		for _, j := range m.decoding {
			if j.progress >= float64(j.tokens-1)-eps {
				j.progress = float64(j.tokens - 1)
				j.phase, j.doneAt = phaseDone, m.now
				happened = true
				if changed != nil {
					changed(j)
				}
				continue
			}
			going = append(going, j)
		}
		m.decoding = going
		for _, j := range started {
			if j.tokens <= 1 {
				j.phase, j.doneAt = phaseDone, m.now
			} else {
				j.phase = phaseDecode
				m.decoding = append(m.decoding, j)
			}
			if changed != nil {
				changed(j)
			}
		}
		if m.halt {
			m.halt = false
			break
		}
		if dt <= 0 && !happened {
			break // rounding left nothing to do before t
		}
	}
}
