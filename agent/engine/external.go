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

func (e *externalEngine) Start(ctx context.Context, _ Needs) (Endpoint, error) {
	base := strings.TrimRight(e.r.URL, "/")
	p := newProber(e.r.APIKey, e.env.probeTimeout)
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
	version := externalVersion(ctx, p, strings.TrimSuffix(base, "/v1"))
	e.mu.Lock()
	e.info.Version = version
	e.info.Props = listedProps(listed, e.r.model)
	e.mu.Unlock()
	return Endpoint{BaseURL: base, Model: e.r.served, APIKey: e.r.APIKey}, nil
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

func (e *externalEngine) Info() protocol.EngineInfo {
	e.mu.Lock()
	defer e.mu.Unlock()
	info := e.info
	info.Props = copyProps(e.info.Props)
	return info
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
