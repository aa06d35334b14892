package agent

import (
	"context"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/vlmfleet/vlmfleet/agent/power"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// powerHold switches the device for the jobs that ask and puts it back
// when the agent has no further job for it: a sweep over two modes
// switches twice and restores once. Restoring when the agent is idle, not
// after each job, spares the device a switch back and forth (and a wait
// for its clocks) between two jobs that both set the power; the guard's
// file makes sure that a killed agent restores at its next start.
type powerHold struct {
	guard *power.Guard // nil: the device has nothing to switch
	log   zerolog.Logger
	// after bounds the wait for a job known to be queued.
	after time.Duration

	mu    sync.Mutex
	timer *time.Timer
	// gen tells a timer that fired after a job began that it is stale.
	gen int

	nowMu sync.Mutex
	now   protocol.PowerSetting
}

// current is what the device runs in, as last read: for heartbeats.
func (h *powerHold) current() protocol.PowerSetting {
	h.nowMu.Lock()
	defer h.nowMu.Unlock()
	return h.now
}

// read reads what the device runs in now and remembers it.
func (h *powerHold) read(ctx context.Context) (protocol.PowerSetting, error) {
	now, err := h.guard.Switcher().Current(ctx)
	if err == nil {
		h.nowMu.Lock()
		h.now = now
		h.nowMu.Unlock()
	}
	return now, err
}

// pending says that the device is switched and not yet put back. It waits
// for a restore in progress, so that once it says false, current already
// reports what the device was put back to.
func (h *powerHold) pending() bool {
	if h.guard == nil {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.guard.Pending()
}

// begin puts the device in s for a job: switched, or back as found for a
// job that sets nothing. It returns what the device runs in then.
func (h *powerHold) begin(ctx context.Context, s protocol.PowerSetting) (protocol.PowerSetting, error) {
	if h.guard == nil {
		return protocol.PowerSetting{}, nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.stopTimer()
	if s.IsZero() {
		h.restoreLocked(ctx, "a job that measures the device as found")
	} else if err := h.guard.Switch(ctx, s); err != nil {
		_, _ = h.read(context.WithoutCancel(ctx))
		return protocol.PowerSetting{}, err
	}
	return h.read(ctx)
}

// end is called when a job has ended: with no job queued the device is
// put back now, else when the next job does not come within h.after.
func (h *powerHold) end(ctx context.Context, queued bool) {
	if h.guard == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.guard.Pending() {
		return
	}
	if !queued {
		h.restoreLocked(ctx, "no job queued")
		return
	}
	gen := h.gen
	h.timer = time.AfterFunc(h.after, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.gen == gen {
			h.restoreLocked(ctx, "the queued job did not come")
		}
	})
}

// close puts the device back as the agent stops.
func (h *powerHold) close(ctx context.Context) {
	if h.guard == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.stopTimer()
	h.restoreLocked(ctx, "the agent is stopping")
}

func (h *powerHold) stopTimer() {
	h.gen++
	if h.timer != nil {
		h.timer.Stop()
		h.timer = nil
	}
}

// restoreLocked restores what the guard wrote down, on a context that
// outlives the job's and the agent's (bounded): a device must not stay
// switched because the job that switched it was cancelled.
func (h *powerHold) restoreLocked(ctx context.Context, why string) {
	if !h.guard.Pending() {
		return
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), power.RestoreTimeout)
	defer cancel()
	restored, err := h.guard.Restore(rctx)
	if err != nil {
		h.log.Error().Err(err).Str("guard", h.guard.Path()).Str("why", why).Msg("cannot put the device's power back; the next start tries again")
	} else {
		h.log.Info().Str("power", restored.String()).Str("why", why).Msg("power restored to what the agent found")
	}
	_, _ = h.read(rctx)
}
