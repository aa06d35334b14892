// Package fakellama is llama.cpp's llama-server as a client of its HTTP API
// sees it, for tests that attach to an endpoint (`vlmfleet bench`,
// measure.EndpointSpec) where no llama-server can run. It behaves as a
// real build was seen to (docs/engines.md, issue 9): /props with
// total_slots and build_info, a model list owned by "llamacpp", any model
// name accepted, at most total_slots requests served at once, the role
// chunk in the same write as the first token, usage and timings in a final
// chunk with empty choices, and a prompt cache that serves a repeated
// picture (cache_n of all but one prompt token) unless the request says
// "cache_prompt": false. Only tests import it.
package fakellama

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// Build is the build_info the fake reports.
const Build = "b12074-dc02e1f"

// Options shape the server.
type Options struct {
	// Slots is /props total_slots (-np); 0 means 1.
	Slots int
	// Model is the id its model list gives; "" means "tiny".
	Model string
	// Tokens is the tokens of each answer, at most max_tokens; 0 means 4.
	Tokens int
	// PromptTokens is each request's prompt size; 0 means 250 (one 720p
	// picture of the tiny model, with the prompt).
	PromptTokens int
	// IgnoreCachePrompt serves repeats from the cache whatever the request
	// says, as a server whose cache is on for good.
	IgnoreCachePrompt bool
}

// Server is a running fake llama-server on loopback.
type Server struct {
	*httptest.Server
	o     Options
	slots chan struct{}

	mu     sync.Mutex
	seen   map[string]bool
	bodies []map[string]any
}

// Start runs the fake until the test ends. Its URL + "/v1" is the base URL.
func Start(t testing.TB, o Options) *Server {
	t.Helper()
	if o.Slots <= 0 {
		o.Slots = 1
	}
	if o.Model == "" {
		o.Model = "tiny"
	}
	if o.Tokens <= 0 {
		o.Tokens = 4
	}
	if o.PromptTokens <= 0 {
		o.PromptTokens = 250
	}
	s := &Server{o: o, slots: make(chan struct{}, o.Slots), seen: map[string]bool{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.HandleFunc("GET /props", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{
			"default_generation_settings": map[string]any{"n_ctx": 4096},
			"total_slots":                 o.Slots,
			"model_path":                  "/models/" + o.Model + ".gguf",
			"modalities":                  map[string]bool{"vision": true, "audio": false},
			"build_info":                  Build,
		})
	})
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"object": "list",
			"data": []any{map[string]any{"id": o.Model, "object": "model", "owned_by": "llamacpp"}}})
	})
	mux.HandleFunc("POST /v1/chat/completions", s.chat)
	s.Server = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

// Requests is the decoded body of every chat request so far.
func (s *Server) Requests() []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]map[string]any(nil), s.bodies...)
}

func (s *Server) chat(w http.ResponseWriter, r *http.Request) {
	s.slots <- struct{}{} // beyond total_slots a request waits, as in llama-server
	defer func() { <-s.slots }()
	var body map[string]any
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": map[string]any{"code": 400, "message": err.Error(), "type": "invalid_request_error"}})
		return
	}
	// The cache keeps every prompt it has seen (its messages, pictures and all).
	key := fmt.Sprint(body["messages"])
	cacheOn := body["cache_prompt"] != false || s.o.IgnoreCachePrompt
	s.mu.Lock()
	s.bodies = append(s.bodies, body)
	hit := cacheOn && s.seen[key]
	s.seen[key] = true
	s.mu.Unlock()
	n := s.o.Tokens
	if mt, ok := body["max_tokens"].(float64); ok && int(mt) < n && mt > 0 {
		n = int(mt)
	}
	cached := 0
	if hit {
		cached = s.o.PromptTokens - 1
	}
	w.Header().Set("Content-Type", "text/event-stream")
	fl := w.(http.Flusher)
	chunk := func(delta string, finish string) string {
		f := "null"
		if finish != "" {
			f = `"` + finish + `"`
		}
		return `data: {"choices":[{"finish_reason":` + f + `,"index":0,"delta":` + delta + `}],"created":1,"id":"chatcmpl-x","model":"` + s.o.Model + `","object":"chat.completion.chunk"}` + "\n\n"
	}
	// The role chunk comes in the same write as the first token.
	var b strings.Builder
	b.WriteString(chunk(`{"role":"assistant","content":null}`, ""))
	b.WriteString(chunk(`{"content":"word "}`, ""))
	fmt.Fprint(w, b.String())
	fl.Flush()
	for i := 1; i < n; i++ {
		fmt.Fprint(w, chunk(`{"content":"word "}`, ""))
		fl.Flush()
	}
	fmt.Fprint(w, chunk(`{}`, "length"))
	fmt.Fprintf(w, `data: {"choices":[],"created":1,"id":"chatcmpl-x","model":%q,"object":"chat.completion.chunk",`+
		`"usage":{"completion_tokens":%d,"prompt_tokens":%d,"total_tokens":%d},`+
		`"timings":{"cache_n":%d,"prompt_n":%d,"prompt_ms":12.5,"predicted_n":%d,"predicted_ms":20,"predicted_per_second":%g}}`+"\n\n",
		s.o.Model, n, s.o.PromptTokens, n+s.o.PromptTokens, cached, s.o.PromptTokens-cached, n, float64(n)/0.020)
	fmt.Fprint(w, "data: [DONE]\n\n")
	fl.Flush()
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
