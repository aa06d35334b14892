package loadgen

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/internal/testutil"
	"github.com/vlmfleet/vlmfleet/protocol"
)

func measureOne(t *testing.T, tg Target, w protocol.Workload, imgs Images) protocol.Combination {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	combos, err := Measure(ctx, tg, w, imgs, Hooks{})
	if err != nil {
		t.Fatalf("Measure: %v", err)
	}
	if len(combos) != 1 {
		t.Fatalf("got %d combinations, want 1", len(combos))
	}
	if err := combos[0].Validate(); err != nil {
		t.Fatalf("combination does not validate: %v", err)
	}
	return combos[0]
}

// vLLM style: role chunk with "content":"" at once, a comment and an empty
// delta, the first token 80 ms later, then ten tokens 10 ms apart and a
// usage chunk with empty choices.
func TestTTFTSkipsRoleChunkCommentsAndEmptyDeltas(t *testing.T) {
	f := newFakeEngine(t, func(s *sse, n int, req fakeRequest) {
		s.event(vllmRoleChunk)
		s.raw(": ping\n\n")
		s.event(emptyDelta)
		s.sleep(80 * time.Millisecond)
		for i := 0; i < 10; i++ {
			if i > 0 {
				s.sleep(10 * time.Millisecond)
			}
			s.event(tokenChunk(fmt.Sprintf("tok%d ", i)))
		}
		s.event(finishChunk)
		s.event(usageChunk(1234, 10))
		s.event("[DONE]")
	})
	w := oneCombo("720p", 1, 3, 1)
	c := measureOne(t, f.target(), w, testImages{n: 4})
	if c.Completed != 3 || c.Failed != 0 {
		t.Fatalf("completed %d failed %d (%v), want 3 and 0", c.Completed, c.Failed, c.Errors)
	}
	if got := len(f.requests()); got != 4 {
		t.Errorf("server saw %d requests, want 1 warm-up + 3 measured", got)
	}
	if c.Warmup != 1 || len(c.Requests) != 3 {
		t.Errorf("warmup %d, records %d; want 1 and 3", c.Warmup, len(c.Requests))
	}
	for _, r := range c.Requests {
		within(t, "TTFT ms", ms(r.TTFT), 80, 80+tolMS)
		within(t, "role chunk ms", ms(r.RoleChunk), 0, tolMS)
		within(t, "TTFB ms", ms(r.TTFB), 0, tolMS)
		// 10 tokens, 9 gaps of >= 10 ms each (a loaded machine stretches
		// every one of the nine sleeps); TPS and ITL follow from that span.
		span := r.LastToken - r.TTFT
		within(t, "first to last token ms", ms(span), 50, 90+6*tolMS)
		within(t, "TPS", r.TPS, 9/span*0.999999, 9/span*1.000001)
		within(t, "ITL ms", ms(r.ITL), ms(span/9)*0.999999, ms(span/9)*1.000001)
		if r.CompletionTokens != 10 || r.TokenSource != protocol.TokensFromUsage || r.PromptTokens != 1234 {
			t.Errorf("tokens %d from %q, prompt %d; want 10 from usage, 1234", r.CompletionTokens, r.TokenSource, r.PromptTokens)
		}
		if r.FinishReason != "stop" {
			t.Errorf("finish reason %q, want stop", r.FinishReason)
		}
		within(t, "E2E ms", ms(r.E2E), 170, 170+8*tolMS)
		if !(r.TTFT <= r.LastToken && r.LastToken <= r.E2E) {
			t.Errorf("TTFT %g, last token %g, E2E %g out of order", r.TTFT, r.LastToken, r.E2E)
		}
	}
	within(t, "mean TTFT ms", ms(c.TTFT.Mean), 80, 80+tolMS)
	if c.TTFT.N != 3 || c.Width != 1280 || c.Height != 720 {
		t.Errorf("TTFT n %d, size %dx%d", c.TTFT.N, c.Width, c.Height)
	}
	if c.OutputTokensPerSec <= 0 || c.WallSec <= 0 {
		t.Errorf("output tokens/s %g, wall %g", c.OutputTokensPerSec, c.WallSec)
	}
}

// llama.cpp style: CRLF line endings, a "content":null role chunk, events
// split across writes and several packed in one, timings, no usage.
func TestCRLFSplitPackedAndLlamaTimings(t *testing.T) {
	f := newFakeEngine(t, func(s *sse, n int, req fakeRequest) {
		crlf := func(data string) string { return "data: " + data + "\r\n\r\n" }
		s.raw(crlf(llamaRoleChunk))
		s.sleep(40 * time.Millisecond)
		first := crlf(tokenChunk("Hello"))
		// The first token event arrives in two halves 30 ms apart: the token
		// exists only once the whole event is there.
		s.raw(first[:25])
		s.sleep(30 * time.Millisecond)
		s.raw(first[25:])
		s.sleep(20 * time.Millisecond)
		// Four tokens in one write, then the final chunk with timings.
		s.raw(crlf(tokenChunk(" a")) + crlf(tokenChunk(" b")) + crlf(tokenChunk(" c")) + crlf(tokenChunk(" d")))
		s.raw(crlf(`{"choices":[{"finish_reason":"length","index":0,"delta":{}}],"timings":{"prompt_n":812,"prompt_ms":35.5,"predicted_n":5,"predicted_per_second":99.1}}`))
		s.raw("data: [DONE]\r\n\r\n")
	})
	c := measureOne(t, f.target(), oneCombo("480p", 1, 2, 0), testImages{n: 2})
	if c.Completed != 2 {
		t.Fatalf("completed %d, errors %v", c.Completed, c.Errors)
	}
	for _, r := range c.Requests {
		// The first token exists only once its second half is there, after
		// two sleeps (40 + 30 ms); the last one after a third (20 ms).
		within(t, "TTFT ms", ms(r.TTFT), 70, 70+2*tolMS)
		within(t, "last token ms", ms(r.LastToken), 90, 90+4*tolMS)
		if r.RoleChunk <= 0 || r.RoleChunk >= r.TTFT {
			t.Errorf("role chunk %g should come before TTFT %g", r.RoleChunk, r.TTFT)
		}
		if r.CompletionTokens != 5 || r.TokenSource != protocol.TokensFromChunks {
			t.Errorf("tokens %d from %q, want 5 counted from chunks", r.CompletionTokens, r.TokenSource)
		}
		// Five chunks over >= 20 ms: at most 4/0.020 = 200 tokens/s.
		span := r.LastToken - r.TTFT
		within(t, "first to last token ms", ms(span), 1, 20+4*tolMS)
		within(t, "TPS", r.TPS, 4/span*0.999999, 4/span*1.000001)
		if r.Timings["prompt_n"] != 812 || r.Timings["prompt_ms"] != 35.5 {
			t.Errorf("timings %v, want prompt_n 812 and prompt_ms 35.5 kept", r.Timings)
		}
		if r.FinishReason != "length" {
			t.Errorf("finish %q", r.FinishReason)
		}
	}
}

// Deltas without content are tokens too: reasoning models think first
// (reasoning_content and reasoning deltas), and a tool call's arguments
// stream as tool_calls deltas.
func TestNonContentDeltasAreTokens(t *testing.T) {
	reasoning := func(field string) func(s *sse) {
		return func(s *sse) {
			s.event(vllmRoleChunk)
			s.sleep(50 * time.Millisecond)
			s.event(`{"choices":[{"index":0,"delta":{"` + field + `":"Let me look."}}]}`)
			s.sleep(30 * time.Millisecond)
			s.event(tokenChunk("A street."))
			s.event(usageChunk(100, 2))
			s.event("[DONE]")
		}
	}
	for _, tc := range []struct {
		name    string
		ttft    float64 // ms
		respond func(s *sse)
	}{
		{"reasoning_content", 50, reasoning("reasoning_content")},
		{"reasoning", 50, reasoning("reasoning")},
		{"tool_calls", 40, func(s *sse) {
			s.event(`{"choices":[{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":[]}}]}`)
			s.sleep(40 * time.Millisecond)
			s.event(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"alarm"}}]}}]}`)
			s.event(`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`)
			s.event("[DONE]")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeEngine(t, func(s *sse, n int, req fakeRequest) { tc.respond(s) })
			c := measureOne(t, f.target(), oneCombo("480p", 1, 1, 0), testImages{n: 1})
			if c.Completed != 1 {
				t.Fatalf("errors %v", c.Errors)
			}
			within(t, "TTFT ms", ms(c.Requests[0].TTFT), tc.ttft, tc.ttft+tolMS)
		})
	}
}

// Failures are counted, kept once per distinct error and left out of the figures.
func TestFailuresAreCountedAndLeftOut(t *testing.T) {
	f := newFakeEngine(t, func(s *sse, n int, req fakeRequest) {
		switch n % 6 {
		case 0:
			s.w.WriteHeader(500)
			_, _ = s.w.Write([]byte(`{"error":{"message":"CUDA out of memory"}}`))
		case 1:
			s.w.WriteHeader(400)
			_, _ = s.w.Write([]byte(`{"error":"too many images"}`))
		case 2: // hangs up after the first token
			s.event(vllmRoleChunk)
			s.event(tokenChunk("x"))
			s.hangUp()
		case 3: // no token at all
			s.event(vllmRoleChunk)
			s.event(finishChunk)
			s.event("[DONE]")
		case 4: // an error event mid-stream, or an answer that is not a stream
			if n == 10 {
				s.w.Header().Set("Content-Type", "application/json")
				_, _ = s.w.Write([]byte(`{"choices":[{"message":{"content":"A street."}}]}`))
				return
			}
			s.event(tokenChunk("x"))
			s.event(`{"error":{"message":"engine died","code":500}}`)
		default: // fine, 20 ms to the first token
			s.answer(20*time.Millisecond, 10, "ok", "ok")
		}
	})
	c := measureOne(t, f.target(), oneCombo("480p", 1, 12, 0), testImages{n: 1})
	if c.Completed != 2 || c.Failed != 10 {
		t.Fatalf("completed %d failed %d, want 2 and 10; errors %v", c.Completed, c.Failed, c.Errors)
	}
	if len(c.Errors) != 6 {
		t.Fatalf("want 6 distinct errors, got %d: %v", len(c.Errors), c.Errors)
	}
	want := []string{"HTTP 500: ", "CUDA out of memory", "HTTP 400: ", "too many images", "stream broken after 1 token chunks",
		"no token in the response", "server error in stream: engine died", "HTTP 200 but not a stream (Content-Type application/json)"}
	all := fmt.Sprint(c.Errors)
	for _, w := range want {
		if !strings.Contains(all, w) {
			t.Errorf("errors %s lack %q", all, w)
		}
	}
	for _, e := range c.Errors {
		want := 2
		if strings.Contains(e.Error, "engine died") || strings.Contains(e.Error, "not a stream") {
			want = 1
		}
		if e.Count != want {
			t.Errorf("error %q counted %d times, want %d", e.Error, e.Count, want)
		}
	}
	if c.TTFT.N != 2 {
		t.Errorf("TTFT over %d requests, want the 2 completed", c.TTFT.N)
	}
	within(t, "mean TTFT ms", ms(c.TTFT.Mean), 20, 20+tolMS)
	for _, r := range c.Requests {
		if (r.Seq%6 == 5) != (r.Error == "") {
			t.Errorf("request %d: error %q", r.Seq, r.Error)
		}
	}
}

func TestRequestTimeout(t *testing.T) {
	f := newFakeEngine(t, func(s *sse, n int, req fakeRequest) {
		s.event(vllmRoleChunk)
		s.sleep(5 * time.Second) // ends when the client gives up
	})
	w := oneCombo("480p", 1, 2, 0)
	w.RequestTimeoutSec = 0.15
	c := measureOne(t, f.target(), w, testImages{n: 1})
	if c.Failed != 2 || len(c.Errors) != 1 || !strings.Contains(c.Errors[0].Error, "timed out after 150ms") {
		t.Fatalf("failed %d errors %v, want 2 timeouts", c.Failed, c.Errors)
	}
	for _, r := range c.Requests {
		within(t, "E2E of a timed-out request ms", ms(r.E2E), 150, 150+tolMS)
	}
}

// A dead engine: every request fails, the combination is still returned and
// Measure goes on to the next one.
func TestDeadEngineStillReturnsCombinations(t *testing.T) {
	addr := testutil.ClosedAddr(t)
	w := oneCombo("480p", 2, 4, 1)
	w.Cameras = []int{1, 2}
	combos, err := Measure(context.Background(), Target{BaseURL: "http://" + addr + "/v1", Model: "m"}, w, testImages{n: 1}, Hooks{})
	if err != nil {
		t.Fatalf("Measure: %v", err)
	}
	if len(combos) != 2 {
		t.Fatalf("%d combinations, want 2", len(combos))
	}
	for _, c := range combos {
		if c.Failed != 4 || c.Completed != 0 || len(c.Errors) != 1 || !strings.Contains(c.Errors[0].Error, "connection refused") {
			t.Errorf("%s: failed %d completed %d errors %v", c.ComboKey, c.Failed, c.Completed, c.Errors)
		}
		if err := c.Validate(); err != nil {
			t.Error(err)
		}
	}
}

// The closed loop: never more in flight than cameras, all cameras busy,
// warm-up requests sent but not measured.
func TestClosedLoopInFlightAndWarmup(t *testing.T) {
	f := newFakeEngine(t, func(s *sse, n int, req fakeRequest) {
		s.answer(15*time.Millisecond, 5, "a", "b")
	})
	w := oneCombo("720p", 4, 20, 2)
	var comboStarts []string
	var reqs int
	h := Hooks{
		ComboStart: func(idx, n int, pc protocol.PlannedCombo, warmup bool) {
			comboStarts = append(comboStarts, fmt.Sprintf("%d/%d %s %v", idx, n, pc.ComboKey, warmup))
		},
		Request: func(k protocol.ComboKey, rec protocol.RequestRecord, p Progress) {
			if p.InFlight > 4 || p.Total != 20 {
				t.Errorf("progress %+v", p)
			}
		},
		ComboDone: func(idx int, c *protocol.Combination) error { reqs = c.Completed; return nil },
	}
	combos, err := Measure(context.Background(), f.target(), w, testImages{n: 16}, h)
	if err != nil {
		t.Fatal(err)
	}
	c := combos[0]
	if c.Completed != 20 || reqs != 20 || c.Warmup != 8 {
		t.Fatalf("completed %d (hook saw %d), warmup %d; want 20, 20, 8", c.Completed, reqs, c.Warmup)
	}
	if got := len(f.requests()); got != 28 {
		t.Errorf("server saw %d requests, want 8 warm-up + 20 measured", got)
	}
	if m := f.maxIn.Load(); m > 4 {
		t.Errorf("server held %d requests at once, more than 4 cameras", m)
	}
	if c.MaxInFlight < 1 || c.MaxInFlight > 4 {
		t.Errorf("MaxInFlight %d", c.MaxInFlight)
	}
	want := []string{"0/1 720p-1img-4cam true", "0/1 720p-1img-4cam false"}
	if fmt.Sprint(comboStarts) != fmt.Sprint(want) {
		t.Errorf("combo starts %v, want %v", comboStarts, want)
	}
	seen := map[int]bool{}
	for _, r := range c.Requests {
		seen[r.Seq] = true
		if r.Camera < 0 || r.Camera > 3 {
			t.Errorf("camera %d", r.Camera)
		}
	}
	if len(seen) != 20 {
		t.Errorf("%d distinct request numbers, want 20", len(seen))
	}
}

// The images: how many per request, the cycle through the set, the data URL
// passed through as given, the request fields of the method.
func TestRequestBodyAndImageCycle(t *testing.T) {
	f := newFakeEngine(t, func(s *sse, n int, req fakeRequest) {
		s.event(tokenChunk("a"))
		s.event("[DONE]")
	})
	w := protocol.Workload{
		Prompt: "Describe the scene.", MaxTokens: 64,
		MultiImageSizes: []string{"2K"}, ImagesPerRequest: []int{3}, MultiImageRequests: 4,
		WarmupRequests: 1, RequestTimeoutSec: 10,
	}
	tg := f.target()
	tg.APIKey = "sekrit"
	tg.ExtraBody = map[string]any{"temperature": 0, "messages": "ignored", "cache_prompt": false}
	c := measureOne(t, tg, w, testImages{n: 5})
	if c.Completed != 4 || c.Images != 3 || c.Cameras != 1 {
		t.Fatalf("combination %+v", c.ComboKey)
	}
	got := f.requests()
	if len(got) != 5 {
		t.Fatalf("server saw %d requests, want 5", len(got))
	}
	for i, req := range got {
		if req.Model != "fake-vlm" || !req.Stream || !req.StreamOptions.IncludeUsage || req.MaxTokens != 64 ||
			req.CachePrompt == nil || *req.CachePrompt || req.auth != "Bearer sekrit" {
			t.Errorf("request %d fields: %+v", i, req)
		}
		if len(req.Messages) != 1 || req.Messages[0].Role != "user" || req.Messages[0].Content[0].Text != "Describe the scene." {
			t.Errorf("request %d messages: %+v", i, req.Messages)
		}
		imgs := req.images()
		if len(imgs) != 3 {
			t.Fatalf("request %d carries %d images, want 3", i, len(imgs))
		}
		// Request 0 is the warm-up, which takes the end of the cycle
		// (pictures 2, 3, 4); measured request r uses pictures (r*3+j) mod 5.
		first := (i - 1) * 3
		if i == 0 {
			first = 2
		}
		for j, u := range imgs {
			want := fmt.Sprintf("data:image/jpeg;base64,2K-pic%d", (first+j)%5)
			if u != want {
				t.Errorf("request %d image %d = %q, want %q", i, j, u, want)
			}
		}
	}
}

func TestUniqueImagesAreAllDistinct(t *testing.T) {
	f := newFakeEngine(t, func(s *sse, n int, req fakeRequest) {
		s.event(tokenChunk("a"))
		s.event("[DONE]")
	})
	w := oneCombo("1080p", 2, 6, 1)
	w.UniqueImages = protocol.Set(true)
	w.Cameras = []int{1, 2}
	_, err := Measure(context.Background(), f.target(), w, testImages{n: 3}, Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, req := range f.requests() {
		for _, u := range req.images() {
			if seen[u] {
				t.Errorf("image %q sent twice in unique mode", u)
			}
			seen[u] = true
		}
	}
	if len(seen) != 1+6+2+6 {
		t.Errorf("%d distinct images, want 15", len(seen))
	}
}

func TestComboDoneErrorAndCancelStop(t *testing.T) {
	f := newFakeEngine(t, func(s *sse, n int, req fakeRequest) {
		s.event(tokenChunk("a"))
		s.event("[DONE]")
	})
	w := oneCombo("480p", 1, 2, 0)
	w.Cameras = []int{1, 2, 4}
	boom := errors.New("telemetry broke")
	combos, err := Measure(context.Background(), f.target(), w, testImages{n: 1}, Hooks{
		ComboDone: func(idx int, c *protocol.Combination) error {
			if idx == 1 {
				return boom
			}
			return nil
		},
	})
	if !errors.Is(err, boom) || len(combos) != 1 {
		t.Errorf("got %d combinations and %v, want 1 and the hook's error", len(combos), err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	combos, err = Measure(ctx, f.target(), w, testImages{n: 1}, Hooks{
		ComboDone: func(idx int, c *protocol.Combination) error { cancel(); return nil },
	})
	if !errors.Is(err, context.Canceled) || len(combos) != 1 {
		t.Errorf("got %d combinations and %v, want 1 and context.Canceled", len(combos), err)
	}
}

func TestStatsNearestRank(t *testing.T) {
	v := []float64{5, 1, 4, 2, 3, 6, 7, 8, 9, 10}
	s := stats(v)
	if s.N != 10 || s.Mean != 5.5 || s.P50 != 5 || s.P90 != 9 || s.P99 != 10 || s.Min != 1 || s.Max != 10 {
		t.Errorf("stats %+v", s)
	}
	if s := stats(nil); s != (protocol.Stats{}) {
		t.Errorf("empty stats %+v", s)
	}
}

func TestClientInfo(t *testing.T) {
	ci := ClientInfo(testImages{n: 16}, "1.2.3")
	if ci.Name != ClientName || ci.Version != "1.2.3" || ci.ImageSet != "test" || ci.ImageSetHash != "sha256:test" || ci.ImageCount != 16 || ci.Go == "" {
		t.Errorf("%+v", ci)
	}
}

// A server that closes every connection after its answer, without saying
// so: the camera finds its kept connection dead and sends again on a new one.
func TestStaleKeepAliveConnectionIsRedialled(t *testing.T) {
	f := newFakeEngine(t, func(s *sse, n int, req fakeRequest) {
		conn, bw, err := http.NewResponseController(s.w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close()
		body := "data: " + tokenChunk("a") + "\n\ndata: [DONE]\n\n"
		fmt.Fprintf(bw, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
		bw.Flush()
	})
	c := measureOne(t, f.target(), oneCombo("480p", 2, 6, 1), testImages{n: 1})
	if c.Completed != 6 || c.Failed != 0 {
		t.Errorf("completed %d failed %d %v, want 6 and 0", c.Completed, c.Failed, c.Errors)
	}
	if got := len(f.requests()); got != 8 {
		t.Errorf("server handled %d requests, want 8", got)
	}
}

// After a mid-stream error the camera hangs up at once, even with no
// request timeout, instead of reading what the engine still sends.
func TestErrorEventHangsUpOnStreamingEngine(t *testing.T) {
	left := make(chan bool, 4)
	f := newFakeEngine(t, func(s *sse, n int, req fakeRequest) {
		s.event(`{"error":{"message":"overloaded"}}`)
		select {
		case <-s.r.Context().Done():
			left <- true
		case <-time.After(20 * time.Second):
			left <- false
		}
	})
	w := oneCombo("480p", 1, 1, 0)
	w.RequestTimeoutSec = 0
	c := measureOne(t, f.target(), w, testImages{n: 1})
	if c.Failed != 1 || !strings.Contains(c.Errors[0].Error, "overloaded") {
		t.Fatalf("failed %d errors %v", c.Failed, c.Errors)
	}
	if !<-left {
		t.Error("the client kept the connection open after the error")
	}
}
