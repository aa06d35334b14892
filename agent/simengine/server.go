package simengine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/vlmfleet/vlmfleet/agent/loadgen"
)

// Options tune a server.
type Options struct {
	// ServedName is the model name of /v1/models; empty means Profile.Model.
	ServedName string
	// Speedup divides every delay (0 or 1: real time). The delays reported
	// inside responses (llama.cpp timings) stay in simulated time.
	Speedup float64
	// Seed fixes the jitter.
	Seed int64
	// Log receives one line per request at debug level; the zero value logs nothing.
	Log zerolog.Logger
	// GPUSlowdown multiplies the GPU-bound times of the profile (see
	// Profile.WithGPUSlowdown): 0 or 1 serve it as published.
	GPUSlowdown float64
	// FailEvery, when above 0, answers every FailEvery-th chat request with
	// a 500 error instead of serving it: fault injection for the failure
	// path of a client.
	FailEvery int
}

// Server is a simulated engine serving one profile over the OpenAI API.
// Requests share one timing model, advanced by the server's own clock (see
// clock.go): a timer wakes it at its next event, so requests in flight slow
// each other down as they would on the device.
type Server struct {
	p        Profile
	opt      Options
	speedup  float64
	start    time.Time
	ids      atomic.Uint64
	requests atomic.Uint64 // valid chat requests, for FailEvery
	words    []string

	mu     sync.Mutex
	m      *model
	timer  *time.Timer
	clock  vclock
	loops  map[string]*loop
	frames map[string]*frameLoop
}

// New makes a server for a profile.
func New(p Profile, opt Options) *Server {
	if opt.ServedName == "" {
		opt.ServedName = p.Model
	}
	p = p.WithGPUSlowdown(opt.GPUSlowdown)
	sp := opt.Speedup
	if sp <= 0 || math.IsNaN(sp) || math.IsInf(sp, 0) {
		sp = 1
	}
	s := &Server{p: p, opt: opt, speedup: sp, start: time.Now(), m: newModel(p, p.Contention, uint64(opt.Seed)), words: answerWords(),
		loops: map[string]*loop{}, frames: map[string]*frameLoop{}}
	s.clock = vclock{speedup: sp, since: s.start}
	s.timer = time.AfterFunc(time.Hour, s.tick)
	s.timer.Stop()
	return s
}

// Profile is the profile the server simulates.
func (s *Server) Profile() Profile { return s.p }

// Serve serves on ln until ctx ends, then shuts down gracefully (answers in
// flight are cut) and returns nil.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	base, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return base },
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("simulated engine: %w", err)
	case <-ctx.Done():
	}
	cancel() // ends the streams in flight so that Shutdown need not wait for them
	sctx, stop := context.WithTimeout(context.Background(), 5*time.Second)
	defer stop()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("simulated engine: shutdown: %w", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("simulated engine: %w", err)
	}
	return nil
}

// tokenTick bounds how often streaming tokens wake the model, in real time.
const tokenTick = time.Millisecond

// advanceLocked runs the model up to the clock's time at real time now,
// stopping (and holding the clock) where an answer ends while a closed
// loop owes a request, or at a tick whose frame is owed (frames.go). Call
// with s.mu held.
func (s *Server) advanceLocked(now time.Time) {
	if held, _ := s.holdsLocked(now); !held {
		s.clock.run(now)
	}
	for {
		to := s.clock.now(now)
		if at, ok := s.frameBarrierLocked(now); ok && at < to {
			to = at
		}
		halted := false
		s.m.advance(to, func(j *job) {
			wake(j)
			if j.phase == phaseDone && s.endedLocked(j, now) {
				s.m.halt, halted = true, true // a request is owed from here: look again
			}
		})
		if held, _ := s.holdsLocked(now); held {
			s.clock.hold(s.m.now)
			return
		}
		if !halted || s.m.now >= to {
			return
		}
	}
}

// syncLocked advances the model to now, wakes the handlers whose requests moved
// and rearms the timer. Call with s.mu held.
func (s *Server) syncLocked() {
	now := time.Now()
	s.advanceLocked(now)
	for _, j := range s.m.decoding {
		wake(j)
	}
	if held, until := s.holdsLocked(now); held {
		// Nothing moves until the request owed arrives or its grace ends.
		s.timer.Reset(max(0, until.Sub(now)))
		return
	}
	s.clock.run(now)
	sim := s.clock.now(now)
	structural := s.m.nextEvent(false)
	if at, ok := s.frameBarrierLocked(now); ok {
		structural = math.Min(structural, at)
	}
	token := s.m.nextEvent(true)
	if math.IsInf(structural, 1) && math.IsInf(token, 1) {
		s.timer.Stop()
		return
	}
	d := time.Duration((structural - sim) / s.speedup * float64(time.Second))
	if td := max(tokenTick, time.Duration((token-sim)/s.speedup*float64(time.Second))); td < d {
		d = td
	}
	s.timer.Reset(max(0, d))
}

func wake(j *job) {
	if j.notify != nil {
		j.notify()
	}
}

func (s *Server) tick() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.syncLocked()
}

// Handler serves the OpenAI-compatible API.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/chat/completions", s.handleChat)
	mux.HandleFunc("/v1/models", s.handleModels)
	mux.HandleFunc("/health", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	return mux
}

// ModelEntry is one entry of the simulator's GET /v1/models: the OpenAI
// fields and the simulator's own. This type is the contract: the server
// writes it, and clients that tell a simulator from a real engine read it.
type ModelEntry struct {
	ID      string `json:"id"`
	Object  string `json:"object,omitempty"`
	Created int64  `json:"created,omitempty"`
	OwnedBy string `json:"owned_by,omitempty"`
	Root    string `json:"root,omitempty"`
	// Simulated marks the simulator; real engines never send it.
	Simulated bool `json:"simulated,omitempty"`
	// SimSpeedup is how many times faster than its device the simulator
	// runs: a client puts its times back on the device's scale with it.
	SimSpeedup float64 `json:"sim_speedup,omitempty"`
	// SimDevice is the device it stands for, to file the run under.
	SimDevice string `json:"sim_device,omitempty"`
	// SimEngine is the engine it stands for ("vLLM", "llama.cpp"), the
	// run's engine as a lab job on the same profile names it.
	SimEngine string `json:"sim_engine,omitempty"`
	// SimGPUCount is how many of the device's GPUs it stands for: the
	// tensor-parallel size the model is split over.
	SimGPUCount int `json:"sim_gpu_count,omitempty"`
}

func (s *Server) handleModels(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		s.writeError(w, &requestError{code: http.StatusMethodNotAllowed, msg: "use GET"})
		return
	}
	owner := "vllm"
	if s.p.Engine == EngineLlamaCpp {
		owner = "llamacpp"
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"object": "list",
		"data": []ModelEntry{{
			ID: s.opt.ServedName, Object: "model", Created: s.start.Unix(), OwnedBy: owner, Root: s.p.Model,
			Simulated: true, SimSpeedup: s.speedup, SimDevice: s.p.Device, SimEngine: s.p.Engine,
			SimGPUCount: s.p.TP(),
		}},
	})
}

// maxBody bounds a request body: five 2K images are about 5 MB.
const maxBody = 128 << 20

func (s *Server) handleChat(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		s.writeError(w, &requestError{code: http.StatusMethodNotAllowed, msg: "use POST"})
		return
	}
	// The request holds its place in the model from now on (see reserve)
	// until it is refused, before the refusal is written, or served.
	j := s.reserve(r.Header.Get(loadgen.LoopHeader), r.Header.Get(loadgen.FrameHeader))
	left := false
	leave := func() {
		if !left {
			left = true
			s.cancel(j)
		}
	}
	defer leave()
	refuse := func(err error) {
		leave()
		s.writeError(w, err)
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err == nil {
		s.received(j)
	}
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			refuse(&requestError{code: http.StatusRequestEntityTooLarge, msg: fmt.Sprintf("request body over %d bytes", maxBody)})
			return
		}
		s.opt.Log.Debug().Err(err).Msg("simulated engine: reading request")
		return
	}
	req, err := parseRequest(body)
	if err == nil {
		err = s.p.checkLimits(req)
	}
	if err == nil {
		err = s.checkSwitches(req)
	}
	if err == nil && s.p.Engine == EngineVLLM && req.model != "" && req.model != s.opt.ServedName {
		err = &requestError{code: http.StatusNotFound, msg: fmt.Sprintf("The model `%s` does not exist.", req.model)}
	}
	if err != nil {
		refuse(err)
		return
	}
	if n := s.requests.Add(1); s.opt.FailEvery > 0 && n%uint64(s.opt.FailEvery) == 0 {
		refuse(&requestError{code: http.StatusInternalServerError, msg: fmt.Sprintf("simulated failure of request %d (FailEvery %d)", n, s.opt.FailEvery)})
		return
	}
	left = true // serveChat takes it out if its client goes away
	s.serveChat(r.Context(), w, req, j)
}

// promptTokens is what the request reads, images included.
func (s *Server) promptTokens(req parsedRequest) int {
	n := req.textTokens
	for _, d := range req.images {
		n += s.p.imageTokens(d)
	}
	return n
}

// reserve enters a request into the model as it arrives (see
// model.reserve), in the closed loop its loop header names, or at the tick
// of the frame its frame header names; the clock holds while its body is
// read.
func (s *Server) reserve(loopHeader, frameHeader string) *job {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	s.advanceLocked(now)
	var j *job
	if f, ok := loadgen.ParseFrameField(frameHeader); ok {
		j = s.frameArrivedLocked(f, now)
	} else {
		j = s.m.reserve()
		s.arrivedLocked(j, loopHeader, now)
	}
	j.reservedAt = now
	s.syncLocked()
	return j
}

// submit gives a reserved request its work; notify is called (with s.mu
// held) whenever its state may have changed.
func (s *Server) submit(j *job, req parsedRequest, notify chan struct{}) {
	d := demand{pixels: make([]int, len(req.images)), promptTokens: s.promptTokens(req),
		textTokens: req.textTokens, tokens: s.answerLength(req)}
	for i, im := range req.images {
		d.pixels[i] = im.X * im.Y
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	s.advanceLocked(now)
	s.m.fillDemand(j, d)
	if j.phase == phaseDone { // answered while its body was read (see fill)
		s.endedLocked(j, now)
	}
	j.notify = func() {
		select {
		case notify <- struct{}{}:
		default:
		}
	}
	s.syncLocked()
}

// received records that a request's body has been read: what is left
// before it is filled is the simulator's own parsing (see holdsLocked).
func (s *Server) received(j *job) {
	s.mu.Lock()
	defer s.mu.Unlock()
	j.received = true
}

// cancel takes a request that was refused, or whose client went away, out
// of the model.
func (s *Server) cancel(j *job) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	s.advanceLocked(now)
	s.m.remove(j)
	s.endedLocked(j, now)
	s.syncLocked()
}

// snapshot is a job's state read under the lock.
type snapshot struct {
	due             int
	done            bool
	arrive, firstAt float64
	doneAt          float64
	// tick is when the tick of the frame the request carried fell (-1:
	// none), and nextTick the tick its camera takes next.
	tick     float64
	nextTick int
}

func (s *Server) snapshot(j *job) snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := snapshot{due: j.due(), done: j.phase == phaseDone, arrive: j.arrive, firstAt: j.firstAt, doneAt: j.doneAt, tick: -1}
	if j.frame != nil {
		st.tick, st.nextTick = j.frame.due, j.nextTick
	}
	return st
}
