package simengine

import (
	"math"
	"math/rand/v2"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// The timing model is a fluid queue on one shared accelerator, in simulated
// seconds. A request first needs prefill work (reading the prompt and the
// images; seconds at full speed when it is alone), then writes its tokens.
//
//   - Prefill is served in arrival order to a batch of at most batchCap
//     requests at once, whose combined speed is 1+batchGain·(batch−1): vLLM
//     batches the vision encoder and chunked prefill across requests;
//     llama.cpp on a Jetson encodes images one slot at a time (batchCap 1:
//     first come, first served).
//   - Streams being decoded slow prefill down by a factor 1+contention·B (B
//     streams): the fitted per-profile knob that decides Max Cameras.
//   - Each stream writes TPS/(1+decodeK·(B−1)) tokens/s, and
//     1+prefillStall times slower while some prefill runs (llama.cpp stops
//     decoding while it encodes an image).
//
// Single-camera figures come out exactly (no contention with one request in
// flight); the multi-camera ones emerge from the queue.

// knobs are the engine-and-device constants of the model (not fitted).
type knobs struct {
	batchCap     int
	batchGain    float64
	decodeK      float64
	prefillStall float64
}

func knobsFor(p Profile) knobs {
	jetson := isJetson(p.Device)
	if p.Engine == EngineVLLM {
		k := knobs{batchCap: 8, batchGain: 0.7, decodeK: 0.03, prefillStall: 0.3}
		if jetson {
			k.decodeK = 0.06
		}
		return k
	}
	if jetson {
		return knobs{batchCap: 1, batchGain: 0, decodeK: 0.12, prefillStall: 1.0}
	}
	// On a discrete GPU the 16-camera figure of llama.cpp (1.09 s against
	// 0.25 s alone) needs slots prefilled together.
	return knobs{batchCap: 4, batchGain: 0.6, decodeK: 0.08, prefillStall: 1.0}
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
	rate     float64 // current decode rate, set by rates()
	pRate    float64 // current prefill rate, set by rates()
	notify   func()
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
	tps        float64
	costs      costModel
	rng        *rand.Rand
	now        float64
	prefillQ   []*job
	decoding   []*job
}

func newModel(p Profile, contention float64, seed uint64) *model {
	return &model{
		k: knobsFor(p), contention: contention, tps: p.TPS, costs: p.costs(),
		rng: rand.New(rand.NewPCG(seed, 0x5eed5eed)),
	}
}

func (m *model) jitter() float64 { return 1 + jitter*(2*m.rng.Float64()-1) }

// submit adds a request at the model's current time. elapsed is how long
// (in simulated seconds) the request had already been with the server: if
// nothing was ahead of it, its prefill is credited with that time, so the
// server's own parsing does not add to the modelled response time.
func (m *model) submit(pixels []int, tokens int, elapsed float64) *job {
	w := m.costs.prefill(pixels) * m.jitter()
	j := &job{arrive: m.now - max(elapsed, 0), work: w, prefill: w, tokens: max(1, tokens), speed: m.jitter(), firstAt: -1, doneAt: -1}
	if elapsed > 0 && len(m.prefillQ) == 0 {
		rate := 1 / (1 + m.contention*float64(len(m.decoding)))
		j.work = max(w-elapsed*rate, w*1e-6)
	}
	m.prefillQ = append(m.prefillQ, j)
	return j
}

// remove drops a request (its client went away).
func (m *model) remove(j *job) {
	m.prefillQ = without(m.prefillQ, j)
	m.decoding = without(m.decoding, j)
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
	b := len(m.decoding)
	batch := min(len(m.prefillQ), m.k.batchCap)
	for i, j := range m.prefillQ {
		j.pRate = 0
		if i < batch {
			total := (1 + m.k.batchGain*float64(batch-1)) / (1 + m.contention*float64(b))
			j.pRate = total / float64(batch)
		}
	}
	stall := 1.0
	if len(m.prefillQ) > 0 {
		stall = 1 + m.k.prefillStall
	}
	for _, j := range m.decoding {
		j.rate = m.tps * j.speed / (1 + m.k.decodeK*float64(b-1)) / stall
	}
}

// nextEvent is the simulated time of the next prefill or stream completion,
// and with tokens also of the next token written; +Inf when idle.
func (m *model) nextEvent(tokens bool) float64 {
	m.rates()
	next := math.Inf(1)
	for _, j := range m.prefillQ {
		if j.pRate > 0 {
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
			j.work -= j.pRate * dt
		}
		for _, j := range m.decoding {
			j.progress += j.rate * dt
		}
		m.now = next
		var still []*job
		var started []*job
		for _, j := range m.prefillQ {
			if j.pRate > 0 && j.work <= eps*math.Max(1, j.prefill) {
				j.work = 0
				j.firstAt = m.now
				started = append(started, j)
				continue
			}
			still = append(still, j)
		}
		m.prefillQ = still
		happened := len(started) > 0
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
		if dt <= 0 && !happened {
			break // rounding left nothing to do before t
		}
	}
}
