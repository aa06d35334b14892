package simlab

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/vlmfleet/vlmfleet/agent"
	"github.com/vlmfleet/vlmfleet/controller/api"
)

// Device is one simulated agent: an agent id on a simulated device.
type Device struct {
	ID string
	// Device names the simulated device, as agent.SimulatedDevices lists it.
	Device string
	// Models narrows the device's calibrated profiles; empty offers them all.
	Models []string
	// Speedup runs the engine this many times faster than the device does;
	// times are scaled back and the results labelled simulated.
	Speedup float64
	// NATSURL is the agent's own NATS URL (an account of its own on an
	// external server); empty uses the controller's, pinning its CA when
	// its NATS has TLS.
	NATSURL string
	// NATSSeed is the agent's nkey seed. Empty, with NATSURL empty too,
	// AddAgent enrols the agent with the controller (when the controller
	// issues credentials: its default), as an operator would.
	NATSSeed string
	// Labels are the agent's configuration labels.
	Labels map[string]string
	// Deployments, when set, are what the agent offers instead of every
	// calibrated profile of Device (agent.SimulatedDeployments), e.g. with
	// a speed-up of each deployment's own.
	Deployments []agent.DeploymentConfig
}

// Agent is a simulated agent running in the lab.
type Agent struct {
	id     string
	cancel context.CancelFunc
	done   chan struct{}
	err    error
	// reported is set once Stop has returned err to its caller, so that
	// the lab's Close does not return it again.
	reported atomic.Bool
}

// AddAgent starts an agent for d and returns once the controller has
// stored its announcement, so that sweeps naming it can be submitted.
// ctx bounds the wait only; the agent runs until Stop or the lab's Close.
// Adding an id again after stopping it restarts that agent.
func (l *Lab) AddAgent(ctx context.Context, d Device) (*Agent, error) {
	deps := d.Deployments
	var err error
	if deps == nil {
		if deps, err = agent.SimulatedDeployments(d.Device, d.Speedup, d.Models...); err != nil {
			return nil, fmt.Errorf("simlab: agent %s: %w", d.ID, err)
		}
	}
	url, seed, pin := d.NATSURL, d.NATSSeed, ""
	if url == "" {
		url = l.ctrl.NATSURL()
		if strings.HasPrefix(url, "tls://") {
			pin = l.ctrl.TLSFingerprint() // as an operator copies it from the controller's log
		}
		if seed == "" && l.ctrl.NATSAuth() == api.NATSAuthNkeys {
			if seed, err = l.ctrl.EnrolAgent(ctx, d.ID); err != nil {
				return nil, fmt.Errorf("simlab: agent %s: %w", d.ID, err)
			}
		}
	}
	a, err := agent.New(agent.Config{
		ID: d.ID, NATSURL: url, NATSSeed: seed, NATSCAPin: pin, Deployments: deps,
		Simulate: d.Device, SimSpeedup: d.Speedup, LogDir: l.opt.DataDir, Labels: d.Labels,
	}, agent.Options{
		Log: l.opt.Log, Version: l.opt.Version, Getenv: l.opt.Getenv,
		Images: l.opt.Images, JobAckWait: l.opt.JobAckWait,
	})
	if err != nil {
		return nil, fmt.Errorf("simlab: agent %s: %w", d.ID, err)
	}

	// The agent runs on its own context: the caller's only bounds the wait.
	runCtx, stopRun := context.WithCancel(context.Background())
	sa := &Agent{id: d.ID, cancel: stopRun, done: make(chan struct{})}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		stopRun()
		return nil, errors.New("simlab: the lab is closed")
	}
	l.agents = append(l.agents, sa)
	l.mu.Unlock()

	wctx, cancel := context.WithTimeout(ctx, l.opt.ReadyTimeout)
	defer cancel()
	wctx, stopped := context.WithCancelCause(wctx)
	defer stopped(nil)
	w := l.watch(api.EventAgent)
	defer w.stop()
	// An announcement from before this start (a restart under the same id)
	// does not count; the stored time loses nothing finer than this.
	since := time.Now().Truncate(time.Microsecond)
	go func() {
		defer close(sa.done)
		sa.err = a.Run(runCtx)
		stopped(fmt.Errorf("agent %s stopped before announcing itself: %v", d.ID, sa.err))
	}()
	err = w.until(wctx, func(ctx context.Context) (bool, error) { return l.announced(ctx, d.ID, since) })
	if err != nil {
		_ = sa.Stop()
		l.forget(sa) // its error is returned here, not again by Close
		return nil, fmt.Errorf("simlab: agent %s: %w", d.ID, err)
	}
	return sa, nil
}

func (l *Lab) forget(a *Agent) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.agents = slices.DeleteFunc(l.agents, func(x *Agent) bool { return x == a })
}

// announced says whether the controller has stored a hello from agent id
// sent by a run that started at since or later.
func (l *Lab) announced(ctx context.Context, id string, since time.Time) (bool, error) {
	agents, err := l.ctrl.Agents(ctx)
	if err != nil {
		return false, err
	}
	for _, a := range agents {
		if a.ID == id && !a.StartedAt.Before(since) {
			return true, nil
		}
	}
	return false, nil
}

// ID is the agent's id.
func (a *Agent) ID() string { return a.id }

// Done is closed once the agent has ended: stopped, or on its own (its
// credentials revoked); Stop then returns what it ended with.
func (a *Agent) Done() <-chan struct{} { return a.done }

// Stop stops the agent as a signal would: a job it is running is handed
// back to JetStream for its next start. It waits for the agent to end and
// returns the error it ended with; calling it again returns the same.
func (a *Agent) Stop() error {
	a.reported.Store(true)
	return a.stop()
}

func (a *Agent) stop() error {
	a.cancel()
	<-a.done
	if a.err != nil {
		return fmt.Errorf("simlab: agent %s: %w", a.id, a.err)
	}
	return nil
}
