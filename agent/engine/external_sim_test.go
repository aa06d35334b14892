package engine

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/agent/simengine"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// An external server (here shaped like Ollama) is checked, not started or stopped.
func TestExternal(t *testing.T) {
	t.Parallel()
	var auth atomic.Value
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) {
		auth.Store(r.Header.Get("Authorization"))
		json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": []any{map[string]string{"id": "qwen2.5vl:7b"}}})
	})
	mux.HandleFunc("GET /api/version", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]string{"version": "0.12.3"})
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	env := newTestEnv(t)

	e, err := New(Config{Kind: KindExternal, URL: srv.URL + "/v1/", Model: "qwen2.5vl:7b", APIKey: "k"}, env.Env)
	if err != nil {
		t.Fatal(err)
	}
	ep, err := e.Start(context.Background(), Needs{})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	if ep.BaseURL != srv.URL+"/v1" || ep.Model != "qwen2.5vl:7b" || ep.APIKey != "k" {
		t.Errorf("endpoint = %+v", ep)
	}
	if got, _ := auth.Load().(string); got != "Bearer k" {
		t.Errorf("Authorization = %q", got)
	}
	info := e.Info()
	// Ollama says what it is at /api/version.
	if info.Kind != "external" || info.Name != "Ollama" || info.Version != "0.12.3" || len(info.Command) != 0 {
		t.Errorf("info = %+v", info)
	}
	if err := e.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Stop left the server alone.
	if resp, err := http.Get(srv.URL + "/v1/models"); err != nil {
		t.Fatalf("server gone after Stop: %v", err)
	} else {
		resp.Body.Close()
	}

	// A server that does not list the model fails after the timeout, naming what it lists.
	e, err = New(Config{Kind: KindExternal, URL: srv.URL + "/v1", Model: "llava", StartupTimeout: Duration(200 * time.Millisecond)}, env.Env)
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.Start(context.Background(), Needs{})
	if err == nil {
		t.Fatal("Start succeeded for a model the server does not list")
	}
	mustContain(t, "error", err.Error(), "not ready after 200ms", `does not list "llava"`, "qwen2.5vl:7b")
}

// The simulated engine runs in-process behind the same interface and says
// it is simulated.
func TestSim(t *testing.T) {
	t.Parallel()
	profiles := simengine.Profiles()
	if len(profiles) == 0 {
		t.Fatal("simengine has no profiles")
	}
	p := profiles[0]
	env := newTestEnv(t)
	e, err := New(Config{Kind: KindSim, SimDevice: p.Device, SimModel: p.Model, SimQuantization: p.Quantization, SimEngine: p.Engine, SimSpeedup: 50}, env.Env)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ep, err := e.Start(ctx, Needs{MaxCameras: 2})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	if !strings.HasPrefix(ep.BaseURL, "http://127.0.0.1:") || ep.Model != p.Model {
		t.Errorf("endpoint = %+v", ep)
	}
	info := e.Info()
	if info.Kind != "sim" || info.Name != p.Engine || info.Props["simulated"] != "true" || info.Props["sim_speedup"] != "50" || info.Endpoint != ep.BaseURL {
		t.Errorf("info = %+v", info)
	}
	if code, body := chat(t, ep, pngDataURL(t, 64, 64), 1); code != 200 || !strings.Contains(body, "[DONE]") {
		t.Errorf("chat: HTTP %d %s", code, body)
	}
	if err := e.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := http.Get(ep.BaseURL + "/models"); err == nil {
		t.Error("the simulated engine still answers after Stop")
	}
	select {
	case err := <-e.Exited():
		t.Errorf("Exited() after a requested Stop: %v", err)
	default:
	}
	if err := e.Stop(ctx); err != nil {
		t.Errorf("second Stop: %v", err)
	}
}

// The simulator stands in for engines by the names people know them by:
// each of its profiles names the engine of a kind vlmfleet starts, so that
// a simulated run takes that engine's request switches.
func TestSimulatedEnginesAreKnown(t *testing.T) {
	for _, p := range simengine.Profiles() {
		if _, ok := servingEngineOf(protocol.EngineInfo{Kind: KindSim, Name: p.Engine}, ""); !ok {
			t.Errorf("profile %s/%s: engine %q is no started kind's display name", p.Device, p.Model, p.Engine)
		}
	}
}
