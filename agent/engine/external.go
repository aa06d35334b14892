package engine

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// KindExternal is a server the user runs; vlmfleet only talks to it.
const KindExternal = "external"

// externalKind waits a minute for readiness by default: the server is
// started by someone else, usually before the agent.
type externalKind struct{}

func init() { register(externalKind{}) }

func (externalKind) name() string                  { return KindExternal }
func (externalKind) startupTimeout() time.Duration { return time.Minute }

func (externalKind) newEngine(r *resolved, env Env) Engine { return newExternal(r, env) }

// resolve takes the server's base URL; the model is a name on the server,
// never a local file.
func (externalKind) resolve(r *resolved, _ Env) error {
	c := r.Config
	if len(c.Command) > 0 || len(c.ExtraArgs) > 0 {
		return fmt.Errorf("command/extra_args: kind external runs nothing; vlmfleet only talks to the server at url")
	}
	if c.URL == "" {
		return fmt.Errorf("url: missing; want the server's base URL ending in /v1, e.g. http://127.0.0.1:11434/v1")
	}
	u, err := url.Parse(c.URL)
	if err != nil {
		return fmt.Errorf("url: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("url: %q; want http:// or https:// with a host, e.g. http://127.0.0.1:8000/v1", c.URL)
	}
	if u.User != nil {
		return fmt.Errorf("url: carries credentials; put the key in api_key instead")
	}
	// With neither model nor served_name, any model the server lists will do.
	r.model = c.Model
	if r.model == "" {
		r.model = c.ServedName
	}
	r.served = r.model
	return nil
}

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

// described records what the server says of itself: which engine it is,
// its version and properties, and whether the listed model is the
// simulator.
func (e *externalEngine) described(ctx context.Context, p *prober, base string, listed modelList) {
	id := identify(ctx, p, base, listed, e.r.model)
	e.mu.Lock()
	e.info.Version = id.version
	e.info.Props = listedProps(listed, e.r.model)
	for k, v := range id.props {
		if e.info.Props == nil {
			e.info.Props = map[string]string{}
		}
		e.info.Props[k] = v
	}
	if id.name != "" {
		e.info.Name = id.name
	}
	e.mu.Unlock()
}

// serverID is what a server says it is.
type serverID struct {
	name, version string
	props         map[string]string
}

// identify asks each engine vlmfleet knows whether the server is one of
// its own, after the simulator's model list, which names the engine it
// stands for. The surest answer wins (an endpoint only that engine serves,
// then the model list's owned_by, then an answer others could give too),
// so no engine's look depends on another's; on a tie the first kind by
// name. A server that none recognises is left unnamed.
func identify(ctx context.Context, p *prober, base string, listed modelList, model string) serverID {
	root := strings.TrimSuffix(base, "/v1")
	owner := ""
	if m, ok := listed.entry(model); ok {
		owner = strings.ToLower(m.OwnedBy)
	}
	if name := listedName(listed, model); name != "" {
		return serverID{name: name, version: versionAt(ctx, p, root+"/version")}
	}
	var best serverID
	surest := notIt
	for _, s := range servingEngines() {
		id, ev := s.recognise(ctx, p, root, owner)
		if ev > surest {
			best, surest = id, ev
			best.name = s.displayName()
		}
		if surest == fingerprint {
			break
		}
	}
	if surest == notIt {
		return serverID{version: versionAt(ctx, p, root+"/version")}
	}
	return best
}

// versionAt is the "version" of the JSON object at url, "" when there is none.
func versionAt(ctx context.Context, p *prober, url string) string {
	var v struct {
		Version string `json:"version"`
	}
	if err := p.getJSON(ctx, url, &v); err != nil {
		return ""
	}
	return strings.TrimSpace(v.Version)
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
