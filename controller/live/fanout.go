package live

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vlmfleet/vlmfleet/controller/api"
)

// Fanout hands events to subscribers from one goroutine, in order, so a
// NATS callback never waits for a subscriber; when subscribers fall behind
// by more than the buffer, events are dropped and counted (they are live
// views; the durable record is in the store).
type Fanout struct {
	mu      sync.Mutex
	next    int
	subs    map[int]func(api.Event)
	ch      chan api.Event
	dropped atomic.Uint64
}

// NewFanout makes a fanout with room for 4,096 events not yet handed on.
func NewFanout() *Fanout {
	return &Fanout{subs: map[int]func(api.Event){}, ch: make(chan api.Event, 4096)}
}

// Emit queues an event of kind about agentID, stamped now, for the
// subscribers; when they are too far behind it is dropped and counted
// (Dropped).
func (f *Fanout) Emit(kind, agentID string, data any) {
	e := api.Event{Kind: kind, AgentID: agentID, Time: time.Now().UTC(), Data: data}
	select {
	case f.ch <- e:
	default:
		f.dropped.Add(1)
	}
}

// Subscribe calls fn for every event until the returned cancel is called.
func (f *Fanout) Subscribe(fn func(api.Event)) func() {
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

// Run hands the queued events to the subscribers until ctx ends.
func (f *Fanout) Run(ctx context.Context) {
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

// Dropped is how many events were dropped because the subscribers fell
// behind.
func (f *Fanout) Dropped() uint64 { return f.dropped.Load() }
