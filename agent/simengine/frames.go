package simengine

import (
	"math"
	"time"

	"github.com/vlmfleet/vlmfleet/agent/loadgen"
)

// Cameras on a frame clock (loadgen's paced loop) tell the simulator each
// frame's tick (loadgen.FrameHeader), and the simulator keeps their clock
// on its own clock, as it keeps a closed loop's (clock.go): at k cameras
// and an interval T, camera i's tick n falls at start + (n + i/k)·T in
// simulated seconds, start being when the clock's first frame arrived.
//
//   - A frame that arrives before its tick waits for it (model.reserveAt);
//     one that arrives after it is taken at once, late.
//   - When a camera's answer ends, the camera takes the first tick at or
//     after the answer's end: the ticks before it fell due while the
//     answer ran and are dropped. The answer says which (SimTimings'
//     NextTick), and the camera sends that frame.
//   - The model does not run past a tick whose frame is owed (its camera
//     free, the frame not yet arrived): there the clock holds until the
//     frame arrives, as for a closed loop, for loopGrace at most.
//
// So whether a frame is dropped, and how fast it is answered, follows from
// the simulated time alone, however late the host carried a frame or an
// answer. The frames' answers come from the one model, which knows only
// the requests it holds: a frame that arrives alone is answered as one
// camera alone is, whatever the number of cameras.

// frameLoop is what the simulator knows of one frame clock of a client.
type frameLoop struct {
	id       string
	ticks    int
	interval float64 // simulated seconds
	start    float64 // simulated time of camera 0's tick 0
	cams     []frameCam
	last     time.Time // its last sign of life, on the wall clock
}

// frameCam is one camera of a frame clock: the tick whose frame it takes
// next, and whether its frame is with the model (arrived, not ended).
type frameCam struct {
	next int
	busy bool
}

// frameRef is the frame a request carries.
type frameRef struct {
	loop         *frameLoop
	camera, tick int
	due          float64 // its tick, simulated time
	ended        bool    // its camera was freed
}

// due is when camera cam's tick n falls.
func (l *frameLoop) due(cam, n int) float64 {
	return l.start + (float64(n)+float64(cam)/float64(len(l.cams)))*l.interval
}

// owed is the earliest tick whose frame is owed, and whether any is.
func (l *frameLoop) owed() (float64, bool) {
	at, ok := math.Inf(1), false
	for i, c := range l.cams {
		if !c.busy && c.next < l.ticks {
			at, ok = math.Min(at, l.due(i, c.next)), true
		}
	}
	return at, ok
}

// nextTick is the first tick after n of camera cam that falls at or after
// end.
func (l *frameLoop) nextTick(cam, n int, end float64) int {
	const eps = 1e-9
	k := math.Ceil((end-l.start)/l.interval - float64(cam)/float64(len(l.cams)) - eps)
	return int(math.Max(float64(n+1), math.Min(k, float64(l.ticks))))
}

// frameArrivedLocked enters a frame into the model at its tick, or now
// if that has passed. Call with s.mu held, the model advanced to now.
func (s *Server) frameArrivedLocked(f loadgen.FrameField, now time.Time) *job {
	l := s.frames[f.ID]
	if l == nil || len(l.cams) != f.Cameras || l.ticks != f.Ticks {
		l = &frameLoop{id: f.ID, ticks: f.Ticks, interval: f.Interval * s.speedup, start: s.m.now, cams: make([]frameCam, f.Cameras)}
		s.frames[f.ID] = l
	}
	l.last = now
	due := l.due(f.Camera, f.Tick)
	j := s.m.reserveAt(due)
	j.frame = &frameRef{loop: l, camera: f.Camera, tick: f.Tick, due: due}
	l.cams[f.Camera] = frameCam{next: f.Tick, busy: true}
	return j
}

// frameEndedLocked frees the camera of a frame whose request ended
// (answered, refused or abandoned): it takes the first tick at or after
// the end next. It reports whether the camera owes a frame. Call with
// s.mu held.
func (s *Server) frameEndedLocked(j *job, now time.Time) bool {
	f := j.frame
	if f.ended {
		return false
	}
	f.ended = true
	l := f.loop
	end := s.m.now
	if j.doneAt >= 0 {
		end = j.doneAt
	}
	j.nextTick = l.nextTick(f.camera, f.tick, end)
	l.cams[f.camera] = frameCam{next: j.nextTick}
	l.last = now
	if _, ok := l.owed(); !ok && !l.running() {
		delete(s.frames, l.id)
		return false
	}
	return j.nextTick < l.ticks
}

func (l *frameLoop) running() bool {
	for _, c := range l.cams {
		if c.busy {
			return true
		}
	}
	return false
}

// frameBarrierLocked is the earliest tick whose frame is owed by a clock
// still heard from: the model must not run past it. Call with s.mu held.
func (s *Server) frameBarrierLocked(now time.Time) (float64, bool) {
	at, ok := math.Inf(1), false
	for _, l := range s.frames {
		if now.Sub(l.last) >= loopGrace {
			continue
		}
		if due, owed := l.owed(); owed {
			at, ok = math.Min(at, due), true
		}
	}
	return at, ok
}
