// Package backoff is the one retry policy of vlmfleet: exponential waits
// with an upper bound, cut short when the context ends. Every loop that
// waits for something to come back (a controller, a stream, an agent)
// uses it, so that they all back off the same way.
package backoff

import (
	"context"
	"time"
)

// Policy is how long to wait between tries: First, doubling up to Max.
type Policy struct {
	First time.Duration
	Max   time.Duration
}

// Default waits 250 ms, then twice as long each time, up to 5 s.
var Default = Policy{First: 250 * time.Millisecond, Max: 5 * time.Second}

// Retry calls try until it returns nil, a permanent error (see Permanent),
// or ctx ends; attempt counts from 1. It returns nil, the permanent error's
// cause, or the last error joined with ctx's.
func (p Policy) Retry(ctx context.Context, try func(attempt int) error) error {
	b := p.Start()
	for attempt := 1; ; attempt++ {
		err := try(attempt)
		if err == nil {
			return nil
		}
		if perm, ok := err.(permanent); ok {
			return perm.err
		}
		if werr := b.Wait(ctx); werr != nil {
			return &StoppedError{Last: err, Cause: werr}
		}
	}
}

// Start returns a Backoff for a loop that waits between tries on its own.
func (p Policy) Start() *Backoff {
	p = p.normal()
	return &Backoff{p: p, next: p.First}
}

// Delay is the wait after the attempt-th failed try (counting from 1), for
// callers that hand the wait to someone else, such as a JetStream message
// redelivered with a delay: First, doubled for each earlier try, up to Max.
func (p Policy) Delay(attempt int) time.Duration {
	p = p.normal()
	d := p.First
	for i := 1; i < attempt && d < p.Max; i++ {
		d *= 2
	}
	return min(d, p.Max)
}

// normal fills in what a zero or inverted Policy leaves out.
func (p Policy) normal() Policy {
	if p.First <= 0 {
		p = Default
	}
	if p.Max < p.First {
		p.Max = p.First
	}
	return p
}

// Backoff is one loop's state: the next wait.
type Backoff struct {
	p    Policy
	next time.Duration
}

// Next is the wait the next call to Wait makes, and doubles it.
func (b *Backoff) Next() time.Duration {
	d := b.next
	b.next = min(b.next*2, b.p.Max)
	return d
}

// Reset starts the waits again from First (after a success).
func (b *Backoff) Reset() { b.next = b.p.First }

// Wait sleeps for the next wait, or returns ctx's error when it ends first.
func (b *Backoff) Wait(ctx context.Context) error {
	t := time.NewTimer(b.Next())
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

type permanent struct{ err error }

func (p permanent) Error() string { return p.err.Error() }

// Permanent marks an error that retrying cannot fix: Retry returns it at once.
func Permanent(err error) error { return permanent{err: err} }

// StoppedError is what Retry returns when ctx ended before a try succeeded.
type StoppedError struct {
	Last  error
	Cause error
}

func (e *StoppedError) Error() string {
	return e.Cause.Error() + " (last try: " + e.Last.Error() + ")"
}

// Unwrap lets errors.Is see both the context's error and the last try's.
func (e *StoppedError) Unwrap() []error { return []error{e.Cause, e.Last} }
