package simengine

import (
	"time"

	"github.com/vlmfleet/vlmfleet/agent/loadgen"
)

// The simulator's clock is its own: simulated seconds that run speedup
// times faster than the wall clock, except while it is held. Without the
// holds every real millisecond the host spends anywhere between the engine
// and the client (a late goroutine, a late read, a request still being
// parsed) became speedup simulated milliseconds of queueing, and two demo
// runs on the same machine read different Max Cameras.
//
// The clock is held while a closed loop owes it a request, and while a
// request's body is being read. The load generator says where each request
// stands in its loop (loadgen.LoopHeader: its number, the loop's requests
// and cameras), so the simulator knows how many requests the loop still owes
// it at any moment: at the start, one per camera; after an answer ends, the
// camera's next one, unless the loop has sent all its requests. So the
// cameras of a loop start together and each camera's next request arrives,
// in simulated time, exactly when its previous answer ended, however long
// the host took to carry it; the requests in flight make no progress
// meanwhile. A sustained level is an open loop, whose count of requests is
// not known ahead: it owes one request per camera that is neither waiting
// for an answer nor past its last request (marked so in its header), and
// so its cameras meet the queue's steady state in simulated time too. A
// loop whose client went away while it still owed requests holds the
// clock for loopGrace at most.
//
// Cameras on a frame clock owe the clock a frame at each tick a camera is
// free for; frames.go keeps them the same way.

// vclock is a clock of simulated seconds running speedup times the wall
// clock while not held.
type vclock struct {
	speedup float64
	base    float64   // simulated seconds at since
	since   time.Time // when the clock last started running
	held    bool
}

func (c *vclock) now(t time.Time) float64 {
	if c.held {
		return c.base
	}
	return c.base + t.Sub(c.since).Seconds()*c.speedup
}

// hold stops the clock at simulated time at (the model's, never ahead of now).
func (c *vclock) hold(at float64) {
	c.base, c.held = at, true
}

// run lets the clock go on from where it was held.
func (c *vclock) run(t time.Time) {
	if c.held {
		c.since, c.held = t, false
	}
}

// loopGrace bounds how long a loop that owes requests holds the clock
// after its last sign of life: a client that stops halfway must not stop
// the other clients of the simulator for long. A quiet host carries a
// request in a millisecond; under the race detector with the machine's
// cores all busy it took seconds, and a grace that ran out then moved Max
// Cameras again.
const loopGrace = 10 * time.Second

// readGrace bounds how long a request body being received holds the clock:
// a client that sends half a request must not stop the others for long.
// Parsing a body once received is the simulator's own work, which always
// ends, and holds the clock until it does.
const readGrace = 10 * time.Second

// loop is what the simulator knows of one closed loop of a client.
type loop struct {
	id               string
	total, cameras   int
	arrived, running int // requests arrived, and of those not ended
	// open says the loop's count is not known ahead (total 0); finished
	// counts its cameras whose last request has ended.
	open     bool
	finished int
	last     time.Time
}

// owed is how many requests the loop owes now: every camera not waiting for
// an answer sends one, while the loop has requests left, or in an open
// loop while the camera has not sent its last.
func (l *loop) owed() int {
	if l.open {
		return max(0, l.cameras-l.running-l.finished)
	}
	return max(0, min(l.total-l.arrived, min(l.cameras, l.total)-l.running))
}

// over says the loop will send nothing more and has nothing running.
func (l *loop) over() bool {
	if l.open {
		return l.finished >= l.cameras && l.running <= 0
	}
	return l.arrived >= l.total && l.running <= 0
}

// forgetAfter drops a loop with no news this long: its client is gone.
const forgetAfter = time.Minute

// holdsLocked says whether the clock must stay held at real time now, and
// until when at most. Call with s.mu held.
func (s *Server) holdsLocked(now time.Time) (bool, time.Time) {
	held, until := false, time.Time{}
	extend := func(t time.Time) {
		if !held || t.After(until) {
			until = t
		}
		held = true
	}
	for id, l := range s.loops {
		switch {
		case l.owed() > 0 && now.Sub(l.last) < loopGrace:
			extend(l.last.Add(loopGrace))
		case now.Sub(l.last) > forgetAfter:
			delete(s.loops, id)
		}
	}
	for id, l := range s.frames {
		due, owed := l.owed()
		switch {
		case owed && due <= s.m.now && now.Sub(l.last) < loopGrace:
			extend(l.last.Add(loopGrace)) // a tick whose frame has not come
		case now.Sub(l.last) > forgetAfter:
			delete(s.frames, id)
		}
	}
	for _, j := range s.m.prefillQ {
		switch {
		case j.pending && j.received:
			extend(now.Add(readGrace)) // looked at again when it is filled
		case j.pending && now.Sub(j.reservedAt) < readGrace:
			extend(j.reservedAt.Add(readGrace))
		}
	}
	return held, until
}

// arrivedLocked counts a request into the loop its header names.
func (s *Server) arrivedLocked(j *job, header string, now time.Time) {
	f, ok := loadgen.ParseLoopField(header)
	if !ok {
		return
	}
	l := s.loops[f.ID]
	if l == nil {
		l = &loop{id: f.ID, total: f.Total, cameras: f.Cameras, open: f.Open}
		s.loops[f.ID] = l
	}
	l.arrived++
	l.running++
	l.last = now
	j.loop, j.lastOfCamera = l, f.Last
}

// endedLocked counts a request of a loop, or a frame of a frame clock,
// out: answered, refused or abandoned. It reports whether the loop owes a
// request now (or the frame's camera a frame: frames.go).
func (s *Server) endedLocked(j *job, now time.Time) bool {
	if j.frame != nil {
		return s.frameEndedLocked(j, now)
	}
	l := j.loop
	if l == nil {
		return false
	}
	j.loop = nil
	l.running--
	if j.lastOfCamera {
		l.finished++
	}
	l.last = now
	if l.over() {
		delete(s.loops, l.id)
		return false
	}
	return l.owed() > 0
}
