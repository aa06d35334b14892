// Package fakellama is llama.cpp's llama-server as a client of its HTTP API
// sees it, for tests that attach to an endpoint (`vlmfleet bench`,
// measure.EndpointSpec) where no llama-server can run. It behaves as a
// real build was seen to (docs/engines.md): /props with
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
	"strconv"
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

	cache Cache

	mu     sync.Mutex
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
	s := &Server{o: o, slots: make(chan struct{}, o.Slots)}
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
	s.mu.Lock()
	s.bodies = append(s.bodies, body)
	s.mu.Unlock()
	n := s.o.Tokens
	if mt, ok := body["max_tokens"].(float64); ok && int(mt) < n && mt > 0 {
		n = int(mt)
	}
	cacheOn := body["cache_prompt"] != false || s.o.IgnoreCachePrompt
	cached := s.cache.Cached(fmt.Sprint(body["messages"]), cacheOn, s.o.PromptTokens)
	WriteStream(w, s.o.Model, n, s.o.PromptTokens, cached)
}

// Cache is llama-server's prompt cache as its answers show it: a prompt
// seen before is served from the cache, all but its last token, unless the
// request turned the cache off. The zero Cache is empty.
type Cache struct {
	mu   sync.Mutex
	seen map[string]bool
}

// Cached is how many of a prompt's tokens come from the cache (cache_n);
// key identifies the prompt (its messages, pictures and all).
func (c *Cache) Cached(key string, on bool, prompt int) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seen == nil {
		c.seen = map[string]bool{}
	}
	hit := on && c.seen[key]
	c.seen[key] = true
	if !hit || prompt < 1 {
		return 0
	}
	return prompt - 1
}

// WriteStream streams an answer of n tokens as llama-server does: the role
// chunk in the same write as the first token, one write per later token,
// the finish chunk, then usage and timings (with cache_n) in a final chunk
// with empty choices, and [DONE].
func WriteStream(w http.ResponseWriter, model string, n, prompt, cached int) {
	w.Header().Set("Content-Type", "text/event-stream")
	fl, _ := w.(http.Flusher)
	flush := func() {
		if fl != nil {
			fl.Flush()
		}
	}
	chunk := func(delta string, finish string) string {
		f := "null"
		if finish != "" {
			f = `"` + finish + `"`
		}
		return `data: {"choices":[{"finish_reason":` + f + `,"index":0,"delta":` + delta + `}],"created":1,"id":"chatcmpl-x","model":` +
			strconv.Quote(model) + `,"object":"chat.completion.chunk"}` + "\n\n"
	}
	var b strings.Builder
	b.WriteString(chunk(`{"role":"assistant","content":null}`, ""))
	if n > 0 {
		b.WriteString(chunk(`{"content":"word "}`, ""))
	}
	fmt.Fprint(w, b.String())
	flush()
	for i := 1; i < n; i++ {
		fmt.Fprint(w, chunk(`{"content":"word "}`, ""))
		flush()
	}
	fmt.Fprint(w, chunk(`{}`, "length"))
	fmt.Fprintf(w, `data: {"choices":[],"created":1,"id":"chatcmpl-x","model":%q,"object":"chat.completion.chunk",`+
		`"usage":{"completion_tokens":%d,"prompt_tokens":%d,"total_tokens":%d},`+
		`"timings":{"cache_n":%d,"prompt_n":%d,"prompt_ms":12.5,"predicted_n":%d,"predicted_ms":20,"predicted_per_second":%g}}`+"\n\n",
		model, n, prompt, n+prompt, cached, prompt-cached, n, float64(n)/0.020)
	fmt.Fprint(w, "data: [DONE]\n\n")
	flush()
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
