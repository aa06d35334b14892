package engine

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// externalEngine is a server the user runs (Ollama, TensorRT-LLM, NIM, a
// vLLM started by hand): vlmfleet checks that it answers, never starts or
// stops it, and has no log of it.
type externalEngine struct {
	r      *resolved
	env    Env
	exited chan error // never receives: nothing of ours can exit
	// attached is an endpoint measured as it is (Attach), not waited for.
	attached bool

	mu   sync.Mutex
	info protocol.EngineInfo
}

func newExternal(r *resolved, env Env) *externalEngine {
	return &externalEngine{
		r: r, env: env,
		exited: make(chan error),
		info: protocol.EngineInfo{
			Kind:     KindExternal,
			Name:     "external",
			Endpoint: strings.TrimRight(r.URL, "/"),
			Model:    r.model,
		},
	}
}

// attachProbeTimeout bounds the look at an attached endpoint's model list
// and version: an endpoint without them (or a slow one) must not hold up
// the measurement.
const attachProbeTimeout = 5 * time.Second

// Attach returns the engine of an endpoint someone else runs, measured as
// it is (`vlmfleet bench`). Unlike an external deployment it is not waited
// for, since a bench of a dead endpoint is a measurement too (every
// request fails, and says why): Start only looks, once, at what the
// endpoint says of itself, its version and whether it is the simulator.
func Attach(ep Endpoint, env Env) Engine {
	base := strings.TrimRight(ep.BaseURL, "/")
	r := &resolved{Config: Config{Kind: KindExternal, URL: base, APIKey: ep.APIKey}, model: ep.Model, served: ep.Model,
		timeout: attachProbeTimeout}
	env.probeTimeout = attachProbeTimeout
	e := newExternal(r, env)
	e.attached = true
	return e
}

func (e *externalEngine) Start(ctx context.Context, _ Needs) (Endpoint, error) {
	base := strings.TrimRight(e.r.URL, "/")
	p := newProber(e.r.APIKey, e.env.probeTimeout)
	if e.attached {
		ctx, cancel := context.WithTimeout(ctx, e.r.timeout)
		defer cancel()
		ml, err := p.listsModel(ctx, base, "")
		if err != nil {
			e.env.Log.Debug().Err(err).Msg("no model list; taking the endpoint for a real engine")
		}
		e.described(ctx, p, base, ml)
		return Endpoint{BaseURL: base, Model: e.r.served, APIKey: e.r.APIKey}, nil
	}
	deadline := time.NewTimer(e.r.timeout)
	defer deadline.Stop()
	tick := time.NewTicker(e.env.pollEvery)
	defer tick.Stop()
	var listed modelList
	for {
		ml, err := p.listsModel(ctx, base, e.r.model)
		if err == nil {
			listed = ml
			break
		}
		select {
		case <-ctx.Done():
			return Endpoint{}, fmt.Errorf("external: waiting for %s: %w", base, ctx.Err())
		case <-deadline.C:
			return Endpoint{}, fmt.Errorf("external: server at %s not ready after %s (startup_timeout; last check: %v)", base, e.r.timeout, err)
		case <-tick.C:
		}
	}
	e.described(ctx, p, base, listed)
	return Endpoint{BaseURL: base, Model: e.r.served, APIKey: e.r.APIKey}, nil
}

// described records what the server says of itself: its version, and
// whether the listed model is the simulator.
func (e *externalEngine) described(ctx context.Context, p *prober, base string, listed modelList) {
	version := externalVersion(ctx, p, strings.TrimSuffix(base, "/v1"))
	e.mu.Lock()
	e.info.Version = version
	e.info.Props = listedProps(listed, e.r.model)
	if name := listedName(listed, e.r.model); name != "" {
		e.info.Name = name
	}
	e.mu.Unlock()
}

// externalVersion asks the places common servers tell their version:
// vLLM and TensorRT-LLM at /version, Ollama at /api/version.
func externalVersion(ctx context.Context, p *prober, root string) string {
	for _, path := range []string{"/version", "/api/version"} {
		var v struct {
			Version string `json:"version"`
		}
		if err := p.getJSON(ctx, root+path, &v); err == nil && v.Version != "" {
			return v.Version
		}
	}
	return ""
}

func (e *externalEngine) Exited() <-chan error { return e.exited }

func (e *externalEngine) Info() protocol.EngineInfo { return snapshot(&e.mu, &e.info) }

// listedName is the engine a server's model list says it is: the
// simulator names the engine it stands for ("" when the list does not say).
func listedName(ml modelList, model string) string {
	if m, ok := ml.entry(model); ok && m.Simulated {
		return m.SimEngine
	}
	return ""
}

// listedProps records what a server's model list says of the served
// model: that it is the simulator (a `vlmfleet sim` behind an external
// deployment or a bench), so the run is labelled and scaled as one.
func listedProps(ml modelList, model string) map[string]string {
	m, ok := ml.entry(model)
	if !ok {
		return nil
	}
	props := map[string]string{}
	simulationOfEntry(m.ModelEntry).setProps(props)
	if len(props) == 0 {
		return nil
	}
	return props
}

func (e *externalEngine) LogTail(int) string { return "" }

// Stop does nothing: the server is not ours to stop.
func (e *externalEngine) Stop(context.Context) error { return nil }
