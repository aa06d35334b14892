package loadgen

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// fakeRequest is what the fake engine received.
type fakeRequest struct {
	Model         string `json:"model"`
	Stream        bool   `json:"stream"`
	StreamOptions struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	MaxTokens   int   `json:"max_tokens"`
	CachePrompt *bool `json:"cache_prompt"`
	MinTokens   *int  `json:"min_tokens"`
	IgnoreEOS   *bool `json:"ignore_eos"`
	// Tools is a profile's extra body field, as sent.
	Tools    json.RawMessage `json:"tools"`
	Messages []struct {
		Role    string `json:"role"`
		Content []struct {
			Type     string `json:"type"`
			Text     string `json:"text"`
			ImageURL struct {
				URL string `json:"url"`
			} `json:"image_url"`
		} `json:"content"`
	} `json:"messages"`
	auth string
}

func (r fakeRequest) images() []string {
	var out []string
	for _, m := range r.Messages {
		for _, c := range m.Content {
			if c.Type == "image_url" {
				out = append(out, c.ImageURL.URL)
			}
		}
	}
	return out
}

// fakeEngine is an OpenAI-compatible streaming server whose answers and
// timing each test scripts. It counts what it receives and how many
// requests it holds at once.
type fakeEngine struct {
	t        *testing.T
	srv      *httptest.Server
	mu       sync.Mutex
	received []fakeRequest
	inFlight atomic.Int64
	maxIn    atomic.Int64
	// respond answers request number n (0-based, in arrival order).
	respond func(s *sse, n int, req fakeRequest)
}

func newFakeEngine(t *testing.T, respond func(s *sse, n int, req fakeRequest)) *fakeEngine {
	f := &fakeEngine{t: t, respond: respond}
	f.srv = httptest.NewServer(http.HandlerFunc(f.handle))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeEngine) target() Target {
	return Target{BaseURL: f.srv.URL + "/v1", Model: "fake-vlm"}
}

func (f *fakeEngine) requests() []fakeRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]fakeRequest(nil), f.received...)
}

func (f *fakeEngine) handle(w http.ResponseWriter, r *http.Request) {
	now := f.inFlight.Add(1)
	defer f.inFlight.Add(-1)
	for m := f.maxIn.Load(); now > m && !f.maxIn.CompareAndSwap(m, now); m = f.maxIn.Load() {
	}
	if r.URL.Path != "/v1/chat/completions" || r.Method != http.MethodPost {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	var req fakeRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, "bad json: "+err.Error(), http.StatusBadRequest)
		return
	}
	req.auth = r.Header.Get("Authorization")
	f.mu.Lock()
	n := len(f.received)
	f.received = append(f.received, req)
	f.mu.Unlock()
	f.respond(&sse{w: w, r: r}, n, req)
}

// sse writes a scripted response.
type sse struct {
	w       http.ResponseWriter
	r       *http.Request
	started bool
}

func (s *sse) start() {
	if !s.started {
		s.w.Header().Set("Content-Type", "text/event-stream")
		s.w.WriteHeader(http.StatusOK)
		s.started = true
	}
}

// raw writes bytes as they are and flushes them to the client.
func (s *sse) raw(b string) {
	s.start()
	_, _ = s.w.Write([]byte(b))
	s.w.(http.Flusher).Flush()
}

func (s *sse) event(data string) { s.raw("data: " + data + "\n\n") }

// sleep waits as a busy engine would, ending early when the client leaves.
func (s *sse) sleep(d time.Duration) {
	select {
	case <-time.After(d):
	case <-s.r.Context().Done():
	}
}

// answer streams a plain vLLM answer: the role chunk, the tokens ttft
// later, the usage chunk (prompt tokens, one completion token per token
// chunk) and [DONE].
func (s *sse) answer(ttft time.Duration, prompt int, tokens ...string) {
	s.event(vllmRoleChunk)
	s.sleep(ttft)
	for _, tok := range tokens {
		s.event(tokenChunk(tok))
	}
	s.event(usageChunk(prompt, len(tokens)))
	s.event("[DONE]")
}

// hangUp closes the connection without ending the stream.
func (s *sse) hangUp() {
	s.start()
	s.w.(http.Flusher).Flush()
	conn, _, err := http.NewResponseController(s.w).Hijack()
	if err == nil {
		conn.Close()
	}
}

func tokenChunk(text string) string {
	b, _ := json.Marshal(text)
	return `{"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":` + string(b) + `},"finish_reason":null}]}`
}

const (
	vllmRoleChunk  = `{"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`
	llamaRoleChunk = `{"choices":[{"finish_reason":null,"index":0,"delta":{"role":"assistant","content":null}}],"created":1,"id":"y","model":"m","object":"chat.completion.chunk"}`
	emptyDelta     = `{"id":"x","choices":[{"index":0,"delta":{},"finish_reason":null}]}`
	finishChunk    = `{"id":"x","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`
)

func usageChunk(prompt, completion int) string {
	return fmt.Sprintf(`{"id":"x","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":%d,"total_tokens":%d,"completion_tokens":%d}}`, prompt, prompt+completion, completion)
}

// testImages is a tiny picture set: the URL says which picture it is.
type testImages struct{ n int }

func (testImages) Name() string { return "test" }
func (testImages) Hash() string { return "sha256:test" }
func (t testImages) Len() int   { return t.n }
func (t testImages) DataURL(size string, i int) (string, error) {
	return fmt.Sprintf("data:image/jpeg;base64,%s-pic%d", size, i%t.n), nil
}
func (t testImages) UniquePicture(size string, i int, seed uint64) (string, string, error) {
	return fmt.Sprintf("data:image/jpeg;base64,%s-pic%d-u%x-%d", size, i%t.n, seed, i), "", nil
}

// oneCombo is a workload of a single combination.
func oneCombo(size string, cameras, requests, warmup int) protocol.Workload {
	return protocol.Workload{
		Prompt: protocol.DefaultPrompt, MaxTokens: 128,
		Sizes: []string{size}, Cameras: []int{cameras}, RequestsPerLevel: requests,
		WarmupRequests: warmup, RequestTimeoutSec: 10,
	}
}

func ms(sec float64) float64 { return sec * 1000 }

// within fails unless lo <= got <= hi.
func within(t *testing.T, what string, got, lo, hi float64) {
	t.Helper()
	if got < lo || got > hi {
		t.Errorf("%s = %.2f, want within [%.2f, %.2f]", what, got, lo, hi)
	}
}

// tolMS is how much later than injected a client time may be on a loaded
// two-core CI machine.
const tolMS = 50

func (f *fakeEngine) String() string { return strings.TrimPrefix(f.srv.URL, "http://") }
