package engine

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/vlmfleet/vlmfleet/agent/simengine"
	"github.com/vlmfleet/vlmfleet/harness/simtest"
	"github.com/vlmfleet/vlmfleet/internal/testutil"
	"github.com/vlmfleet/vlmfleet/internal/testutil/fakellama"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// openAIServer answers GET paths with fixed JSON, 404 elsewhere, and
// streams a one-token answer to chat requests for the models it serves
// (404 in OpenAI's words for others), as vLLM and Ollama do.
func openAIServer(t *testing.T, get map[string]string, serves ...string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			if body, ok := get[r.URL.Path]; ok {
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(body))
				return
			}
		}
		if r.Method == http.MethodPost && r.URL.Path == "/v1/chat/completions" {
			var req struct {
				Model string `json:"model"`
			}
			_ = json.NewDecoder(r.Body).Decode(&req)
			for _, m := range serves {
				if m == req.Model {
					w.Header().Set("Content-Type", "text/event-stream")
					_, _ = w.Write([]byte("data: {\"choices\":[{\"delta\":{\"content\":\"OK\"},\"finish_reason\":\"length\"}]}\n\ndata: [DONE]\n\n"))
					return
				}
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"error":{"message":"The model ` + "`" + req.Model + "`" + ` does not exist.","type":"NotFoundError","code":404}}`))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"detail":"Not Found"}`)) // FastAPI's, as vLLM answers
	}))
	t.Cleanup(srv.Close)
	return srv
}

// attachInfo starts an attached endpoint and returns what it says it is.
func attachInfo(t *testing.T, base, model string) protocol.EngineInfo {
	t.Helper()
	e := Attach(Endpoint{BaseURL: base, Model: model}, Env{})
	if _, err := e.Start(context.Background(), Needs{}); err != nil {
		t.Fatalf("Start: %v", err)
	}
	return e.Info()
}

// An attached server is named from what it says of itself, instead of
// "external" with no version.
func TestAttachNamesTheServer(t *testing.T) {
	t.Parallel()
	llama := fakellama.Start(t, fakellama.Options{Slots: 4})
	vllm := openAIServer(t, map[string]string{
		"/v1/models": `{"object":"list","data":[{"id":"Qwen/Qwen3-VL-4B","object":"model","owned_by":"vllm","max_model_len":8192}]}`,
		"/version":   `{"version":"0.11.0"}`,
	}, "Qwen/Qwen3-VL-4B")
	ollama := openAIServer(t, map[string]string{
		"/v1/models":   `{"object":"list","data":[{"id":"tiny:latest","object":"model","created":1,"owned_by":"library"}]}`,
		"/api/version": `{"version":"0.17.4"}`,
	}, "tiny", "tiny:latest")
	llamaNoProps := openAIServer(t, map[string]string{
		"/v1/models": `{"object":"list","data":[{"id":"m","object":"model","owned_by":"llamacpp"}]}`,
	}, "m")
	unknown := openAIServer(t, map[string]string{"/v1/models": `{"data":[{"id":"m","owned_by":"nvidia"}]}`}, "m")

	p, err := simengine.Lookup("Jetson AGX Orin", "Cosmos3-Edge", "BF16", "vLLM")
	if err != nil {
		t.Fatal(err)
	}
	sim := simtest.Serve(t, p, simengine.Options{Speedup: 10, Seed: 1})

	for _, c := range []struct {
		what, base, model, name, version string
	}{
		{"llama.cpp", llama.URL + "/v1", "tiny", NameLlamaCpp, fakellama.Build},
		{"vLLM", vllm.URL + "/v1", "Qwen/Qwen3-VL-4B", NameVLLM, "0.11.0"},
		{"Ollama", ollama.URL + "/v1", "tiny", "Ollama", "0.17.4"},
		{"llama.cpp without /props", llamaNoProps.URL + "/v1", "m", NameLlamaCpp, ""},
		{"simulator", sim, p.Model, "vLLM", ""},
		{"unknown", unknown.URL + "/v1", "m", "external", ""},
	} {
		info := attachInfo(t, c.base, c.model)
		if info.Name != c.name || info.Version != c.version || info.Kind != KindExternal {
			t.Errorf("%s: %s %q version %q, want %q version %q", c.what, info.Kind, info.Name, info.Version, c.name, c.version)
		}
		if c.what == "llama.cpp" && (info.Props["total_slots"] != "4" || info.Props["build"] != fakellama.Build) {
			t.Errorf("llama.cpp props %v, want its slots and build", info.Props)
		}
		if c.what == "simulator" && info.Props["simulated"] == "" {
			t.Errorf("simulator props %v do not say so", info.Props)
		}
	}
}

// bench checks the endpoint and the model before it measures anything,
// and says in one line what is wrong.
func TestCheckEndpoint(t *testing.T) {
	t.Parallel()
	vllm := openAIServer(t, map[string]string{
		"/v1/models": `{"object":"list","data":[{"id":"served","object":"model","owned_by":"vllm"}]}`,
	}, "served")
	ollama := openAIServer(t, map[string]string{"/v1/models": `{"data":[{"id":"tiny:latest"}]}`}, "tiny", "tiny:latest", "alias")
	llama := fakellama.Start(t, fakellama.Options{})
	closed := "http://" + testutil.ClosedAddr(t) + "/v1"
	ok := []struct{ base, model string }{
		{vllm.URL + "/v1", "served"},
		{vllm.URL + "/v1/", "served"},
		{ollama.URL + "/v1", "tiny"},
		{llama.URL + "/v1", "tiny"},
	}
	for _, c := range ok {
		if err := CheckEndpoint(context.Background(), Endpoint{BaseURL: c.base, Model: c.model}); err != nil {
			t.Errorf("%s %q: %v", c.base, c.model, err)
		}
	}
	if n := len(llama.Requests()); n != 0 {
		t.Errorf("llama-server got %d chat requests, want none: it lists the model", n)
	}
	bad := []struct {
		base, model string
		want        []string
	}{
		{closed, "x", []string{closed + " does not answer", "connection refused"}},
		{vllm.URL, "served", []string{"/chat/completions: HTTP 404 (Not Found): the URL should end in /v1", vllm.URL + "/v1"}},
		{vllm.URL + "/v1", "wrong", []string{`model "wrong": GET ` + vllm.URL + `/v1/models does not list it; it serves "served"`}},
		{vllm.URL + "/v1/chat/completions", "served", []string{"the URL should end in /v1, e.g. " + vllm.URL + "/v1"}},
		// A server that answers to any name is held to the names it lists,
		// so that a run is not filed under a name that is not its model's.
		{llama.URL + "/v1", "anything", []string{`model "anything"`, `it serves "` + "tiny" + `"`, "--model-name"}},
		{ollama.URL + "/v1", "alias", []string{`it serves "tiny:latest"`}},
	}
	for _, c := range bad {
		err := CheckEndpoint(context.Background(), Endpoint{BaseURL: c.base, Model: c.model})
		if err == nil {
			t.Errorf("%s %q: no error", c.base, c.model)
			continue
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("%s %q: the reason is more than one line: %q", c.base, c.model, err)
		}
		mustContain(t, c.base+" "+c.model, err.Error(), c.want...)
	}
}
