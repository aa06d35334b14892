package measure

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/vlmfleet/vlmfleet/agent/engine"
	"github.com/vlmfleet/vlmfleet/agent/telemetry"
	"github.com/vlmfleet/vlmfleet/protocol"
)

func TestCacheSwitchByEngine(t *testing.T) {
	off := protocol.Workload{CachePrompt: protocol.Set(false)}
	for _, c := range []struct {
		w       protocol.Workload
		info    protocol.EngineInfo
		display string
		want    bool
	}{
		{off, protocol.EngineInfo{Kind: engine.KindLlamaCpp, Name: "llama.cpp"}, "", true},
		{protocol.Workload{}, protocol.EngineInfo{Kind: engine.KindLlamaCpp, Name: "llama.cpp"}, "", false},
		{off, protocol.EngineInfo{Kind: engine.KindVLLM, Command: []string{"vllm", "serve", "--no-enable-prefix-caching"}}, "", true},
		{off, protocol.EngineInfo{Kind: engine.KindVLLM, Command: []string{"vllm", "serve", "--enable-prefix-caching"}}, "", false},
		{off, protocol.EngineInfo{Kind: engine.KindOllama, Name: "Ollama"}, "", false},
		{off, protocol.EngineInfo{Kind: engine.KindExternal, Name: "external"}, "", false},
		{off, protocol.EngineInfo{Kind: engine.KindExternal, Name: "external"}, "llama.cpp", true},
		{off, protocol.EngineInfo{Kind: engine.KindSim, Name: "vLLM"}, "", true},
	} {
		if got := hasCacheSwitch(c.w, c.info, c.display); got != c.want {
			t.Errorf("%+v as %q: cache switch %t, want %t", c.info, c.display, got, c.want)
		}
	}
}

// pictureCounter is an endpoint that does not say what it is, counting
// the distinct pictures its requests carried.
type pictureCounter struct {
	mu       sync.Mutex
	requests int
	seen     map[string]bool
}

func (p *pictureCounter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/v1/models":
		_, _ = w.Write([]byte(`{"data":[{"id":"m"}]}`))
	case "/v1/chat/completions":
		var b struct {
			Messages []struct {
				Content []struct {
					ImageURL struct {
						URL string `json:"url"`
					} `json:"image_url"`
				} `json:"content"`
			} `json:"messages"`
		}
		_ = json.NewDecoder(r.Body).Decode(&b)
		p.mu.Lock()
		p.requests++
		for _, m := range b.Messages {
			for _, c := range m.Content {
				if c.ImageURL.URL != "" {
					p.seen[c.ImageURL.URL] = true
				}
			}
		}
		p.mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte("data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\ndata: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":1}}\n\ndata: [DONE]\n\n"))
	default:
		http.NotFound(w, r)
	}
}

// An endpoint that does not say what it is may cache as it likes, so it
// gets a new picture in every request unless the workload says otherwise;
// a workload that does is honoured, recorded and warned about.
func TestUniqueImagesUnlessTheWorkloadSaysNo(t *testing.T) {
	for _, c := range []struct {
		name   string
		unique *bool
		want   bool
	}{{"unset", nil, true}, {"false", protocol.Set(false), false}} {
		t.Run(c.name, func(t *testing.T) {
			counter := &pictureCounter{seen: map[string]bool{}}
			srv := httptest.NewServer(counter)
			defer srv.Close()
			w := tinyWorkload()
			w.Cameras, w.RequestsPerLevel, w.UniqueImages = []int{1}, 20, c.unique
			run, err := Run(context.Background(), Spec{
				Run:       protocol.Run{ID: "b1", Source: protocol.SourceBench, Workload: w},
				Engine:    engine.Attach(engine.Endpoint{BaseURL: srv.URL + "/v1", Model: "m"}, engine.Env{}),
				Images:    pictures(t),
				Device:    protocol.DeviceFacts{Name: "Build Host"},
				Telemetry: Telemetry{Source: telemetry.SourceOff},
			}, Hooks{})
			if err != nil {
				t.Fatal(err)
			}
			if u := run.Workload.UniqueImages; u == nil || *u != c.want {
				t.Fatalf("recorded unique_images %v, want %t", u, c.want)
			}
			distinct := len(counter.seen) == counter.requests
			if distinct != c.want {
				t.Errorf("%d distinct pictures in %d requests; want every one new: %t", len(counter.seen), counter.requests, c.want)
			}
			warned := len(run.Warnings) == 1 && strings.Contains(run.Warnings[0], "unique_images is false")
			if warned == c.want {
				t.Errorf("warnings %q; want a warning about unique_images false: %t", run.Warnings, !c.want)
			}
		})
	}
}
