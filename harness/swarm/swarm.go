// Package swarm runs many simulated agents in one process against a
// controller, to size it: each agent is the real agent code (agent.Agent)
// with its own id, its own NATS connection and its own credentials,
// enrolled through the controller's API as an operator enrols a device,
// so the controller sees what a fleet of that size costs it (connections,
// per-agent permissions, job consumers, heartbeats, announcements), while
// this process carries the agents' side cheaply: one picture set for all,
// and each agent's simulated engines started once, with the swarm, and
// measured as external endpoints, so that a job starts no engine (a
// thousand engines starting at once for a sweep, each waited on for its
// health, starve one process).
package swarm

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/vlmfleet/vlmfleet/agent"
	"github.com/vlmfleet/vlmfleet/agent/engine"
	"github.com/vlmfleet/vlmfleet/agent/imageset"
	"github.com/vlmfleet/vlmfleet/agent/simengine"
	"github.com/vlmfleet/vlmfleet/controller/client"
)

// Options configure a swarm.
type Options struct {
	// Count is how many agents to run (at least 1).
	Count int
	// Prefix names the agents Prefix-0001, Prefix-0002, ... (default "swarm").
	Prefix string
	// Client is the controller's API: each agent's credentials are created
	// through it (POST /api/agents/{id}/credentials). Nil runs the agents
	// without credentials, for a controller started with --insecure.
	Client *client.Client
	// NATSURL is where the agents connect; empty takes the URL the
	// controller gives with the credentials.
	NATSURL string
	// CAPin is the controller's CA fingerprint for a NATS with TLS; empty
	// takes the one the controller gives with the credentials.
	CAPin string
	// Device is the simulated device, as agent.SimulatedDevices lists it,
	// and Models narrows its profiles (empty: all of them).
	Device string
	Models []string
	// Speedup runs the simulated engines this many times faster (at least 1).
	Speedup float64
	// LogDir holds the engines' logs (required: the agents' jobs write there).
	LogDir string
	// Images is the picture set every agent shares; nil draws it once.
	Images *imageset.Set
	// Enrolers is how many enrolments run at once (default 4).
	Enrolers int
	Log      zerolog.Logger
	Version  string
}

// Swarm is the running agents. Stop ends them.
type Swarm struct {
	ids    []string
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// Enrolled is how long enrolling every agent took.
	Enrolled time.Duration

	mu    sync.Mutex
	ended map[string]error
}

// IDs are the ids of a swarm of n agents named by prefix, in order.
func IDs(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%04d", prefix, i+1)
	}
	return out
}

// Start enrols every agent, then starts them all; it returns once they
// run (not once the controller has their announcements: see Announced in
// the callers). Every enrolment comes before the first agent connects: an
// enrolment reloads the embedded server's users, and an agent that signs
// in during a reload may be refused. ctx bounds the enrolment; the agents
// run until Stop.
func Start(ctx context.Context, opt Options) (*Swarm, error) {
	if opt.Count < 1 {
		return nil, fmt.Errorf("swarm: count %d: want at least 1 agent", opt.Count)
	}
	if opt.Speedup < 1 {
		return nil, fmt.Errorf("swarm: speedup %g: want 1 or more", opt.Speedup)
	}
	if opt.LogDir == "" {
		return nil, errors.New("swarm: a log directory for the engines' logs is required")
	}
	if opt.Prefix == "" {
		opt.Prefix = "swarm"
	}
	if opt.Enrolers <= 0 {
		opt.Enrolers = 4
	}
	if opt.Client == nil && opt.NATSURL == "" {
		return nil, errors.New("swarm: without the controller's API (no credentials), a NATS URL is required")
	}
	deps, err := agent.SimulatedDeployments(opt.Device, opt.Speedup, opt.Models...)
	if err != nil {
		return nil, fmt.Errorf("swarm: %w", err)
	}
	if opt.Images == nil {
		if opt.Images, err = imageset.BuiltinCached(""); err != nil {
			return nil, fmt.Errorf("swarm: pictures: %w", err)
		}
	}
	ids := IDs(opt.Prefix, opt.Count)
	began := time.Now()
	creds, err := enrol(ctx, opt, ids)
	if err != nil {
		return nil, err
	}
	s := &Swarm{ids: ids, Enrolled: time.Since(began), ended: map[string]error{}}
	runCtx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	agents := make([]*agent.Agent, len(ids))
	for i, id := range ids {
		c := creds[i]
		own, err := s.serveEngines(runCtx, deps, opt, i)
		if err != nil {
			s.cancel()
			s.wg.Wait()
			return nil, fmt.Errorf("swarm: agent %s: %w", id, err)
		}
		a, err := agent.New(agent.Config{
			ID: id, NATSURL: c.url, NATSSeed: c.seed, NATSCAPin: c.pin, Deployments: own,
			Simulate: opt.Device, SimSpeedup: opt.Speedup, LogDir: opt.LogDir,
			Labels: map[string]string{"swarm": opt.Prefix},
		}, agent.Options{Log: opt.Log, Version: opt.Version, Images: opt.Images})
		if err != nil {
			s.cancel()
			s.wg.Wait()
			return nil, fmt.Errorf("swarm: agent %s: %w", id, err)
		}
		agents[i] = a
	}
	for i, a := range agents {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			err := a.Run(runCtx)
			if runCtx.Err() == nil {
				// It ended on its own (credentials revoked, refused):
				// kept for Ended, as a fleet loses a device.
				opt.Log.Error().Err(err).Str("agent", ids[i]).Msg("swarm agent ended")
				s.mu.Lock()
				s.ended[ids[i]] = fmt.Errorf("ended on its own: %v", err)
				s.mu.Unlock()
			}
		}()
	}
	return s, nil
}

// serveEngines starts agent i's simulated engines on loopback, one per
// deployment, until ctx ends, and returns the deployments that measure
// them as external endpoints, under the same ids.
func (s *Swarm) serveEngines(ctx context.Context, deps []agent.DeploymentConfig, opt Options, i int) ([]agent.DeploymentConfig, error) {
	out := make([]agent.DeploymentConfig, len(deps))
	for k, d := range deps {
		e := d.Engine
		p, err := simengine.Lookup(e.SimDevice, e.SimModel, e.SimQuantization, e.SimEngine)
		if err != nil {
			return nil, err
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("simulated engine: %w", err)
		}
		srv := simengine.New(p, simengine.Options{Speedup: opt.Speedup, Seed: int64(i + 1)})
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			if err := srv.Serve(ctx, ln); err != nil && ctx.Err() == nil {
				opt.Log.Error().Err(err).Str("deployment", d.ID).Msg("swarm: simulated engine stopped")
			}
		}()
		// The engine is up before the agent starts; what the check of a
		// job's start waits for is this process, which a sweep over a
		// thousand agents at once keeps busy for minutes on a small host.
		d.Engine = engine.Config{Kind: engine.KindExternal, URL: "http://" + ln.Addr().String() + "/v1", Model: p.Model,
			StartupTimeout: engine.Duration(15 * time.Minute)}
		out[k] = d
	}
	return out, nil
}

type agentCreds struct{ url, seed, pin string }

// enrol creates the agents' credentials, Enrolers at a time.
func enrol(ctx context.Context, opt Options, ids []string) ([]agentCreds, error) {
	out := make([]agentCreds, len(ids))
	if opt.Client == nil {
		for i := range out {
			out[i] = agentCreds{url: opt.NATSURL, pin: opt.CAPin}
		}
		return out, nil
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	next := make(chan int)
	var wg sync.WaitGroup
	for range opt.Enrolers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				c, err := opt.Client.CreateAgentCredentials(ctx, ids[i])
				if err != nil {
					cancel(fmt.Errorf("swarm: enrol agent %s: %w", ids[i], err))
					continue
				}
				out[i] = agentCreds{url: cmp.Or(opt.NATSURL, c.NATSURL), seed: c.Seed, pin: cmp.Or(opt.CAPin, c.CAFingerprint)}
			}
		}()
	}
feed:
	for i := range ids {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if ctx.Err() != nil {
		return nil, context.Cause(ctx)
	}
	return out, nil
}

// IDs are the swarm's agent ids, in order.
func (s *Swarm) IDs() []string { return append([]string(nil), s.ids...) }

// Ended lists the agents that ended on their own while the swarm ran, with
// why, as "id: reason" in id order.
func (s *Swarm) Ended() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.ended))
	for id, err := range s.ended {
		out = append(out, id+": "+err.Error())
	}
	sort.Strings(out)
	return out
}

// Stop stops every agent as a signal stops one (a running job is handed
// back) and waits for them. It returns an error naming the agents that
// had ended on their own.
func (s *Swarm) Stop() error {
	s.cancel()
	s.wg.Wait()
	if ended := s.Ended(); len(ended) > 0 {
		return fmt.Errorf("swarm: %d of %d agents ended on their own: %s", len(ended), len(s.ids), strings.Join(ended[:min(len(ended), 5)], "; "))
	}
	return nil
}
