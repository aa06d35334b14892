// Package simlab runs a whole lab in one process: a controller (embedded
// NATS on loopback, a bbolt store, the HTTP API with the explorer) and
// simulated agents that reach it over NATS exactly as agents on other
// devices do. `vlmfleet demo` runs on it and so do the end-to-end tests, so
// the tests exercise what the demo shows and there is one way to start a lab.
//
// Waits are driven by the controller's live events; because those may be
// dropped when a subscriber falls behind, every wait also re-checks the
// stored state now and then, paced by internal/backoff.
package simlab

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/vlmfleet/vlmfleet/agent/imageset"
	"github.com/vlmfleet/vlmfleet/controller"
	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/controller/sweepfile"
	"github.com/vlmfleet/vlmfleet/explorer"
	"github.com/vlmfleet/vlmfleet/explorer/web"
	"github.com/vlmfleet/vlmfleet/internal/backoff"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// Options configure a Lab.
type Options struct {
	// DataDir holds the store, the embedded JetStream files and the agents'
	// engine logs. Required.
	DataDir string
	// HTTPAddr is where the API, the live page and the explorer listen
	// (default "127.0.0.1:0": a free loopback port).
	HTTPAddr string
	// NATSURL is an external NATS server for the controller; empty embeds
	// one on a free loopback port.
	NATSURL string
	// TLS is the controller's Options.TLS: its listeners are on loopback,
	// so the default (auto) is plain and controller.TLSOn turns TLS on,
	// which the agents then pin.
	TLS string
	Log zerolog.Logger
	// Version is what the controller and the agents report.
	Version string
	// Getenv is the agents' environment (default os.Getenv).
	Getenv func(string) string
	// Images is one picture set for every agent (see Pictures); nil lets
	// each agent draw its own on its first job.
	Images *imageset.Set
	// JobAckWait is the AckWait of the agents' job consumers: the
	// controller's Options.JobAckWait, which makes them, and the agents'
	// (0: their defaults).
	JobAckWait time.Duration
	// ReadyTimeout bounds how long AddAgent and Submit wait for an agent's
	// announcement (default 30 s).
	ReadyTimeout time.Duration
}

// Lab is a running controller and the agents added to it. Close ends it.
type Lab struct {
	opt  Options
	ctrl *controller.Controller

	mu     sync.Mutex
	agents []*Agent
	closed bool
}

// Start brings up the controller and returns once it serves. ctx bounds
// the start-up only; the lab runs until Close.
func Start(ctx context.Context, opt Options) (*Lab, error) {
	if opt.HTTPAddr == "" {
		opt.HTTPAddr = "127.0.0.1:0"
	}
	if opt.ReadyTimeout <= 0 {
		opt.ReadyTimeout = 30 * time.Second
	}
	log := opt.Log
	ctrl, err := controller.New(controller.Options{
		DataDir:    opt.DataDir,
		NATSURL:    opt.NATSURL,
		NATSListen: "127.0.0.1:-1",
		HTTPAddr:   opt.HTTPAddr,
		TLS:        opt.TLS,
		JobAckWait: opt.JobAckWait,
		Log:        log,
		Version:    opt.Version,
		Explorer:   func(runs controller.RunSource) http.Handler { return explorer.NewHandler(runs, log, web.WithLab()) },
	})
	if err != nil {
		return nil, fmt.Errorf("simlab: %w", err)
	}
	if err := ctrl.Start(ctx); err != nil {
		_ = ctrl.Close()
		return nil, fmt.Errorf("simlab: start controller: %w", err)
	}
	return &Lab{opt: opt, ctrl: ctrl}, nil
}

// Controller is the lab's controller, for what the harness does not wrap.
func (l *Lab) Controller() *controller.Controller { return l.ctrl }

// Close stops every agent still running, waits for them, then closes the
// controller. It returns what went wrong on the way, if anything, but not
// the errors Stop has already returned.
func (l *Lab) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	agents := slices.Clone(l.agents)
	l.mu.Unlock()
	var errs []error
	for _, a := range agents {
		if err := a.stop(); !a.reported.Load() {
			errs = append(errs, err)
		}
	}
	if err := l.ctrl.Close(); err != nil {
		errs = append(errs, fmt.Errorf("simlab: close controller: %w", err))
	}
	return errors.Join(errs...)
}

// Submit submits the sweep as soon as the controller can make its jobs:
// the agents it names (or, naming none, some agent) must have announced
// themselves. It retries while the controller refuses the sweep for want
// of an agent, for up to Options.ReadyTimeout; a sweep that is wrong in
// itself is refused at once.
func (l *Lab) Submit(ctx context.Context, s protocol.Sweep) (protocol.Sweep, error) {
	if err := sweepfile.Check(s); err != nil {
		return protocol.Sweep{}, fmt.Errorf("simlab: submit %q: %w", s.Name, err)
	}
	ctx, cancel := context.WithTimeout(ctx, l.opt.ReadyTimeout)
	defer cancel()
	w := l.watch(api.EventAgent)
	defer w.stop()
	var out protocol.Sweep
	var last error
	err := w.until(ctx, func(ctx context.Context) (bool, error) {
		var err error
		out, err = l.ctrl.SubmitSweep(ctx, s)
		var bad *api.BadSweepError
		if errors.As(err, &bad) {
			last = err // an agent not announced yet, or without the deployment yet
			return false, nil
		}
		return err == nil, err
	})
	if err != nil && last != nil {
		err = fmt.Errorf("%w (last try: %v)", err, last)
	}
	if err != nil {
		return protocol.Sweep{}, fmt.Errorf("simlab: submit %q: %w", s.Name, err)
	}
	return out, nil
}

// Wait returns once every job of the sweeps has ended, whichever way.
func (l *Lab) Wait(ctx context.Context, sweeps ...protocol.Sweep) error {
	w := l.watch(api.EventState)
	defer w.stop()
	err := w.until(ctx, func(ctx context.Context) (bool, error) {
		for _, s := range sweeps {
			st, err := l.ctrl.SweepStatus(ctx, s.ID)
			if err != nil || !st.Done {
				return false, err
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("simlab: wait for %d sweeps: %w", len(sweeps), err)
	}
	return nil
}

// watcher wakes a wait on the controller's events of some kinds.
type watcher struct {
	wake chan struct{}
	stop func()
}

// watch subscribes at once, so that nothing that happens after it returns
// is missed by the wait that follows.
func (l *Lab) watch(kinds ...string) *watcher {
	w := &watcher{wake: make(chan struct{}, 1)}
	w.stop = l.ctrl.OnEvent(func(ev api.Event) {
		for _, k := range kinds {
			if ev.Kind == k {
				select {
				case w.wake <- struct{}{}:
				default:
				}
				return
			}
		}
	})
	return w
}

// until checks done now, again on every event watched, and at backoff
// intervals in case an event was dropped; it returns done's error, or
// ctx's cause when ctx ends first.
func (w *watcher) until(ctx context.Context, done func(context.Context) (bool, error)) error {
	b := backoff.Default.Start()
	for {
		ok, err := done(ctx)
		if err != nil || ok {
			return err
		}
		t := time.NewTimer(b.Next())
		select {
		case <-ctx.Done():
			t.Stop()
			return context.Cause(ctx)
		case <-w.wake:
			t.Stop()
		case <-t.C:
		}
	}
}

// Pictures prepares the built-in picture set at every size, so that agents
// in one process share one set and no agent's measurement competes with
// the drawing. Pictures kept under cacheDir (imageset.BuiltinCached) are
// read rather than drawn; "" draws them all.
func Pictures(cacheDir string) (*imageset.Set, error) {
	images, err := imageset.BuiltinCached(cacheDir)
	if err != nil {
		return nil, fmt.Errorf("simlab: pictures: %w", err)
	}
	for _, s := range protocol.ImageSizes() {
		if _, err := images.DataURL(s.Name, 0); err != nil {
			return nil, fmt.Errorf("simlab: prepare the %s pictures: %w", s.Name, err)
		}
	}
	return images, nil
}
