package identity

import (
	"context"
	"sync"
	"sync/atomic"
)

// authReloads coalesces the embedded server's user reloads. An options
// reload rebuilds the whole user list and re-checks every connection, so
// its cost grows with the fleet; a thousand devices enrolling at once, one
// reload each, took minutes. Every change made to the identities before a
// batch starts is in that batch's reload, so the changes that arrive while
// one reload runs all wait for the next one, and share it.
type authReloads struct {
	mu sync.Mutex
	// open is the batch that takes new waiters; nil when none waits.
	open *authBatch
	// running is set while a goroutine works through the batches.
	running bool
	// count is how many reloads were made and asked how many calls
	// asked for one, for the tests.
	count, asked atomic.Int64
}

// authBatch is one reload and those who wait for it.
type authBatch struct {
	done chan struct{}
	err  error
}

// applyIdentities returns once the running server has the users the store
// holds now (its caller's change made), or ctx ends. A caller whose
// context ends stops waiting; the reload it asked for still happens.
func (reg *Registry) applyIdentities(ctx context.Context) error {
	r := &reg.authReloads
	r.mu.Lock()
	b := r.open
	if b == nil {
		b = &authBatch{done: make(chan struct{})}
		r.open = b
	}
	start := !r.running
	r.running = true
	r.asked.Add(1)
	r.mu.Unlock()
	if start {
		// The reload outlives a caller that gives up: others share it.
		go reg.reloadBatches(context.WithoutCancel(ctx))
	}
	select {
	case <-b.done:
		return b.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// reloadBatches reloads the server's users once for each batch that
// gathered while the previous one ran, until none waits.
func (reg *Registry) reloadBatches(ctx context.Context) {
	r := &reg.authReloads
	for {
		if reg.hooks.BeforeReload != nil {
			reg.hooks.BeforeReload()
		}
		r.mu.Lock()
		b := r.open
		r.open = nil
		if b == nil {
			r.running = false
			r.mu.Unlock()
			return
		}
		r.mu.Unlock()
		reg.authMu.Lock()
		b.err = reg.reloadAuth(ctx)
		reg.authMu.Unlock()
		r.count.Add(1)
		close(b.done)
	}
}
