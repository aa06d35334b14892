package simengine

import (
	"time"
)

// The simulator's clock is its own: simulated seconds that run speedup
// times faster than the wall clock, except while it is held. Without the
// holds every real millisecond the host spends anywhere between the engine
// and the client (a late goroutine, a late read, a request still being
// parsed) became speedup simulated milliseconds of queueing, and two demo
// runs on the same machine read different Max Cameras.
//
// The clock is held while the closed loop owes it a request: from the
// simulated instant a camera's answer ends until that camera's next request
// has arrived and been read, and while any request's body is being read. So
// a camera's next request arrives in simulated time exactly when its
// previous answer ended, however long the host took to carry it, and the
// other requests in flight make no progress meanwhile. A camera is known by
// its connection (the load generator keeps one per camera). A camera that
// does not come back (its closed loop has ended) holds the clock only for a
// grace period, learned from how long returning cameras take.

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

// Bounds of the grace a camera's next request is waited for.
const (
	// minGrace covers a client's turnaround on a quiet host (well under a
	// millisecond) many times over.
	minGrace = 20 * time.Millisecond
	// maxGrace bounds what one camera that has finished can cost the
	// others in real time.
	maxGrace = 500 * time.Millisecond
	// graceFactor is how many times the slowest recent turnaround the
	// grace is: a loaded host's turnaround varies by several times.
	graceFactor = 8
	// readGrace bounds how long a request body being read holds the
	// clock: a client that sends half a request must not stop the others.
	readGrace = 2 * time.Second
)

// camera is what the clock knows of one connection between two requests.
type camera struct {
	// owed is when its last answer ended (real time), while its next
	// request is owed.
	owed    time.Time
	owing   bool
	lastUse time.Time
}

// turnarounds keeps the slowest recent turnarounds of returning cameras:
// the time from the end of an answer in the model to the next request of
// the same camera, on the wall clock.
type turnarounds struct {
	recent [32]time.Duration
	next   int
}

func (t *turnarounds) add(d time.Duration) {
	t.recent[t.next%len(t.recent)] = d
	t.next++
}

// grace is how long a camera's next request is waited for.
func (t *turnarounds) grace() time.Duration {
	var slowest time.Duration
	for _, d := range t.recent {
		slowest = max(slowest, d)
	}
	return min(maxGrace, max(minGrace, graceFactor*slowest))
}

// forgetAfter drops what is known of a connection idle this long: it was
// closed, or its client is gone.
const forgetAfter = time.Minute

// holdsLocked says whether the clock must stay held at real time now, and
// until when at most (zero: until something arrives). Call with s.mu held.
func (s *Server) holdsLocked(now time.Time) (bool, time.Time) {
	held, until := false, time.Time{}
	extend := func(t time.Time) {
		if !held || t.After(until) {
			until = t
		}
		held = true
	}
	grace := s.turns.grace()
	for key, c := range s.cams {
		switch {
		case c.owing && now.Sub(c.owed) < grace:
			extend(c.owed.Add(grace))
		case c.owing:
			c.owing = false // its loop has ended
		case now.Sub(c.lastUse) > forgetAfter:
			delete(s.cams, key)
		}
	}
	for _, j := range s.m.prefillQ {
		if j.pending && now.Sub(j.reservedAt) < readGrace {
			extend(j.reservedAt.Add(readGrace))
		}
	}
	return held, until
}

// answeredLocked records that job j's answer ended in the model: its
// camera owes the clock its next request.
func (s *Server) answeredLocked(j *job, now time.Time) {
	if j.cam == "" {
		return
	}
	c := s.cams[j.cam]
	if c == nil {
		c = &camera{}
		s.cams[j.cam] = c
	}
	c.owed, c.owing, c.lastUse = now, true, now
}

// arrivedLocked records that a camera's request arrived.
func (s *Server) arrivedLocked(cam string, now time.Time) {
	c := s.cams[cam]
	if c == nil {
		s.cams[cam] = &camera{lastUse: now}
		return
	}
	if c.owing {
		s.turns.add(now.Sub(c.owed))
	}
	c.owing, c.lastUse = false, now
}
