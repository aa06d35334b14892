package engine

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// attachProbeTimeout bounds the look at an attached endpoint's model list
// and version: an endpoint without them (or a slow one) must not hold up
// the measurement.
const attachProbeTimeout = 5 * time.Second

// attached is an endpoint someone else runs and that is measured as it is
// (`vlmfleet bench`): unlike an external deployment it is not waited for,
// since a bench of a dead endpoint is a measurement too (every request
// fails, and says why).
type attached struct {
	endpoint Endpoint
	env      Env
	exited   chan error

	mu   sync.Mutex
	info protocol.EngineInfo
}

// Attach returns the engine of an endpoint that is already serving. Start
// only looks, once, at what the endpoint says of itself: its version, and
// whether it is the simulator, whose times a run puts back on its device's
// scale. Stop leaves the server running.
func Attach(ep Endpoint, env Env) Engine {
	ep.BaseURL = strings.TrimRight(ep.BaseURL, "/")
	return &attached{
		endpoint: ep,
		env:      env,
		exited:   make(chan error),
		info:     protocol.EngineInfo{Kind: KindExternal, Name: KindExternal, Endpoint: ep.BaseURL, Model: ep.Model},
	}
}

func (e *attached) Start(ctx context.Context, _ Needs) (Endpoint, error) {
	ctx, cancel := context.WithTimeout(ctx, attachProbeTimeout)
	defer cancel()
	p := newProber(e.endpoint.APIKey, attachProbeTimeout)
	ml, err := p.listsModel(ctx, e.endpoint.BaseURL, "")
	if err != nil {
		e.env.Log.Debug().Err(err).Msg("no model list; taking the endpoint for a real engine")
	}
	version := externalVersion(ctx, p, strings.TrimSuffix(e.endpoint.BaseURL, "/v1"))
	e.mu.Lock()
	e.info.Version = version
	e.info.Props = listedProps(ml, e.endpoint.Model)
	e.mu.Unlock()
	return e.endpoint, nil
}

func (e *attached) Exited() <-chan error { return e.exited }

func (e *attached) Info() protocol.EngineInfo {
	e.mu.Lock()
	defer e.mu.Unlock()
	info := e.info
	info.Props = copyProps(e.info.Props)
	return info
}

func (e *attached) LogTail(int) string { return "" }

// Stop does nothing: the server is not ours to stop.
func (e *attached) Stop(context.Context) error { return nil }
