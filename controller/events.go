package controller

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vlmfleet/vlmfleet/controller/api"
)

// fanout hands events to subscribers from one goroutine, in order, so a
// NATS callback never waits for a subscriber; when subscribers fall behind
// by more than the buffer, events are dropped and counted (they are live
// views; the durable record is in the store).
type fanout struct {
	mu      sync.Mutex
	next    int
	subs    map[int]func(api.Event)
	ch      chan api.Event
	dropped atomic.Uint64
}

func newFanout() *fanout {
	return &fanout{subs: map[int]func(api.Event){}, ch: make(chan api.Event, 4096)}
}

func (f *fanout) emit(e api.Event) {
	select {
	case f.ch <- e:
	default:
		f.dropped.Add(1)
	}
}

func (f *fanout) subscribe(fn func(api.Event)) func() {
	f.mu.Lock()
	id := f.next
	f.next++
	f.subs[id] = fn
	f.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			f.mu.Lock()
			delete(f.subs, id)
			f.mu.Unlock()
		})
	}
}

func (f *fanout) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case e := <-f.ch:
			f.mu.Lock()
			fns := make([]func(api.Event), 0, len(f.subs))
			for _, fn := range f.subs {
				fns = append(fns, fn)
			}
			f.mu.Unlock()
			for _, fn := range fns {
				fn(e)
			}
		}
	}
}

// OnEvent calls fn for every live event until cancel is called. fn is
// called from a single goroutine, in order, and must return quickly
// (hand the event to a channel without blocking if work is needed).
func (c *Controller) OnEvent(fn func(api.Event)) (cancel func()) {
	return c.events.subscribe(fn)
}

func (c *Controller) emit(kind, agentID string, data any) {
	c.events.emit(api.Event{Kind: kind, AgentID: agentID, Time: time.Now().UTC(), Data: data})
}
