package simengine

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"image"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/vlmfleet/vlmfleet/agent/loadgen"
)

// profileRequest is a profile workload's request as a client sends it.
type profileRequest struct {
	words     int    // text words (the sized ISL)
	image     string // data URL, or none
	maxTokens int
	stream    bool
	extra     map[string]any // forced-length switches, extra body
	loop      string         // the loop header's value, or none
}

func (r profileRequest) body() []byte {
	var text strings.Builder
	for i := range r.words {
		fmt.Fprintf(&text, "w%d ", i)
	}
	parts := []map[string]any{{"type": "text", "text": text.String()}}
	if r.image != "" {
		parts = append(parts, map[string]any{"type": "image_url", "image_url": map[string]string{"url": r.image}})
	}
	req := map[string]any{
		"model": "m", "stream": r.stream, "max_tokens": r.maxTokens,
		"messages": []map[string]any{{"role": "user", "content": parts}},
	}
	if r.stream {
		req["stream_options"] = map[string]bool{"include_usage": true}
	}
	for k, v := range r.extra {
		req[k] = v
	}
	b, _ := json.Marshal(req)
	return b
}

// profileAnswer is what a client reads of an answer.
type profileAnswer struct {
	tokens              int // content chunks, or the whole answer's words
	finish              string
	prompt, completion  int
	total               int
	sim                 loadgen.SimTimings
	usageOnEmptyChoices bool
}

func askProfile(t *testing.T, url string, r profileRequest) profileAnswer {
	t.Helper()
	a, err := askProfileErr(url, r)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// answerMsg is an answer's chunk, or its whole body.
type answerMsg struct {
	Choices []struct {
		Delta        struct{ Content *string }
		Message      struct{ Content string }
		FinishReason *string `json:"finish_reason"`
	}
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
		TotalTokens      int `json:"total_tokens"`
	}
	Sim *loadgen.SimTimings `json:"sim_timings"`
}

func (a *profileAnswer) read(m answerMsg) {
	for _, c := range m.Choices {
		if c.Delta.Content != nil && *c.Delta.Content != "" {
			a.tokens++
		}
		if c.Message.Content != "" {
			a.tokens += len(strings.Fields(c.Message.Content))
		}
		if c.FinishReason != nil {
			a.finish = *c.FinishReason
		}
	}
	if m.Usage != nil {
		a.prompt, a.completion, a.total = m.Usage.PromptTokens, m.Usage.CompletionTokens, m.Usage.TotalTokens
		a.usageOnEmptyChoices = len(m.Choices) == 0
	}
	if m.Sim != nil {
		a.sim = *m.Sim
	}
}

func askProfileErr(url string, r profileRequest) (profileAnswer, error) {
	var a profileAnswer
	req, err := http.NewRequest(http.MethodPost, url+"/v1/chat/completions", bytes.NewReader(r.body()))
	if err != nil {
		return a, err
	}
	req.Header.Set("Content-Type", "application/json")
	if r.loop != "" {
		req.Header.Set(loadgen.LoopHeader, r.loop)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return a, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return a, fmt.Errorf("status %d", resp.StatusCode)
	}
	if !r.stream {
		var m answerMsg
		if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
			return a, err
		}
		a.read(m)
		return a, nil
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		e, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || e == "[DONE]" {
			continue
		}
		var m answerMsg
		if err := json.Unmarshal([]byte(e), &m); err != nil {
			return a, fmt.Errorf("chunk %q: %w", e, err)
		}
		a.read(m)
	}
	return a, sc.Err()
}

// The data-center profile counts the prompt its own way (1.3 tokens a
// word, 1601 a Llama 3.2 Vision tile, 4 for the message), reports usage
// in vLLM's final empty-choices chunk and in a whole answer's body, and
// holds the OSL only when vLLM's switches ask for it: alone, its answer
// ends by itself after naturalAnswerTokens.
func TestProfileUsageAndForcedLength(t *testing.T) {
	p, err := LookupTP("H100-HBM3-80GB", "Llama-3.2-11B-Vision-Instruct", "FP8", "", 1)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(New(p, Options{ServedName: "m", Speedup: 500}).Handler())
	defer ts.Close()
	img := jpegURL(t, 1120, 1120)
	forced := map[string]any{"min_tokens": 300, "ignore_eos": true}
	wantPrompt := (13*769+9)/10 + 4*1601 + 4
	for _, c := range []struct {
		name       string
		stream     bool
		extra      map[string]any
		want       int
		wantFinish string
	}{
		{"streamed, natural", true, nil, naturalAnswerTokens, "stop"},
		{"streamed, forced", true, forced, 300, "length"},
		{"streamed, min_tokens only", true, map[string]any{"min_tokens": 250}, 250, "stop"},
		{"whole, natural", false, nil, naturalAnswerTokens, "stop"},
		{"whole, forced", false, forced, 300, "length"},
	} {
		a := askProfile(t, ts.URL, profileRequest{words: 769, image: img, maxTokens: 300, stream: c.stream, extra: c.extra})
		if a.prompt != wantPrompt || a.completion != c.want || a.total != wantPrompt+c.want || a.tokens != c.want || a.finish != c.wantFinish {
			t.Errorf("%s: prompt %d completion %d total %d, %d tokens written, finish %q; want %d, %d, %d, %d, %q",
				c.name, a.prompt, a.completion, a.total, a.tokens, a.finish, wantPrompt, c.want, wantPrompt+c.want, c.want, c.wantFinish)
		}
		if c.stream && !a.usageOnEmptyChoices {
			t.Errorf("%s: usage not in a chunk with empty choices", c.name)
		}
	}
	// vLLM refuses a min_tokens above max_tokens, as its sampling
	// parameters do.
	_, err = askProfileErr(ts.URL, profileRequest{words: 10, maxTokens: 300, stream: true, extra: map[string]any{"min_tokens": 301}})
	if err == nil || !strings.Contains(err.Error(), "400") {
		t.Errorf("min_tokens above max_tokens: %v, want status 400", err)
	}
}

// The edge profiles answer profile requests too: llama.cpp knows
// ignore_eos but not min_tokens (ignored, as unknown fields are), and a
// long text costs prefill time beyond the camera prompt's.
func TestEdgeProfileAnswersProfileRequests(t *testing.T) {
	p := mustLookup(t, "RTX PRO 6000", "Qwen3-VL-4B-Instruct", "Q8_0", "llama.cpp")
	ts := httptest.NewServer(New(p, Options{Speedup: 200}).Handler())
	defer ts.Close()
	img := jpegURL(t, 1280, 720)
	wantImage := p.imageTokens(image.Pt(1280, 720))
	for _, c := range []struct {
		extra map[string]any
		want  int
	}{
		{map[string]any{"min_tokens": 200}, naturalAnswerTokens},
		{map[string]any{"ignore_eos": true}, 200},
	} {
		a := askProfile(t, ts.URL, profileRequest{words: 100, image: img, maxTokens: 200, stream: true, extra: c.extra})
		if a.completion != c.want || a.tokens != c.want || a.prompt != 130+wantImage+4 {
			t.Errorf("%v: completion %d, %d tokens written, prompt %d; want %d, %d, %d", c.extra, a.completion, a.tokens, a.prompt, c.want, c.want, 130+wantImage+4)
		}
	}
	short := askProfile(t, ts.URL, profileRequest{words: 100, image: img, maxTokens: 2, stream: true})
	long := askProfile(t, ts.URL, profileRequest{words: 15000, image: img, maxTokens: 2, stream: true})
	if long.sim.TTFT < 2*short.sim.TTFT {
		t.Errorf("TTFT with 19500 text tokens %.4g s, with 130 %.4g s: want the long text to cost prefill time", long.sim.TTFT, short.sim.TTFT)
	}
}

// Published Min Latency lines over HTTP: one request at a time, the
// server's own times (its speed-up undone) within 10 %.
func TestProfileMinLatencyOverHTTP(t *testing.T) {
	for _, c := range []struct {
		model, gpu, precision string
		tp, isl, osl          int
		ttft, itl, latency    float64 // ms, published
	}{
		{"Llama-3.2-11B-Vision-Instruct", "H100-HBM3-80GB", "FP8", 1, 1000, 1000, 198, 7.4, 7598},
		{"Llama-3.2-90B-Vision-Instruct", "A100-SXM4-80GB", "BF16", 4, 60000, 2000, 26692, 41.1, 108892},
	} {
		p, err := LookupTP(c.gpu, c.model, c.precision, "", c.tp)
		if err != nil {
			t.Fatal(err)
		}
		speedup := c.latency / 50 // about 50 ms a request
		ts := httptest.NewServer(New(p, Options{ServedName: "m", Speedup: speedup}).Handler())
		a := askProfile(t, ts.URL, profileRequest{words: int(float64(c.isl) / 1.3), image: jpegURL(t, 1120, 1120),
			maxTokens: c.osl, stream: true, extra: map[string]any{"min_tokens": c.osl, "ignore_eos": true}})
		ts.Close()
		ttft := a.sim.TTFT * speedup * 1000
		lat := a.sim.E2E * speedup * 1000
		itl := (lat - ttft) / float64(a.completion-1)
		t.Logf("%s on %s TP%d ISL %d: TTFT %.4g ms, ITL %.4g ms, latency %.4g ms", c.model, c.gpu, c.tp, c.isl, ttft, itl, lat)
		for _, f := range []struct {
			name      string
			got, want float64
		}{{"TTFT", ttft, c.ttft}, {"ITL", itl, c.itl}, {"latency", lat, c.latency}} {
			if math.Abs(f.got/f.want-1) > 0.10 {
				t.Errorf("%s on %s TP%d ISL %d: %s %.4g ms, published %g", c.model, c.gpu, c.tp, c.isl, f.name, f.got, f.want)
			}
		}
		if a.completion != c.osl {
			t.Errorf("%s: completion %d, want %d", c.model, a.completion, c.osl)
		}
	}
}

// A Max Throughput line over HTTP: concurrency clients in one closed loop
// (the loop header holds the server's clock while the loop owes it a
// request, so the host's delays do not count), the throughput from the
// server's own times within 15 % of the published.
func TestProfileMaxThroughputOverHTTP(t *testing.T) {
	p, err := LookupTP("A100-SXM4-80GB", "Llama-3.2-90B-Vision-Instruct", "BF16", "", 4)
	if err != nil {
		t.Fatal(err)
	}
	const (
		clients, each = 4, 3
		published     = 0.02 // req/s, ISL 60000, OSL 2000
		speedup       = 2000
	)
	ts := httptest.NewServer(New(p, Options{ServedName: "m", Speedup: speedup}).Handler())
	defer ts.Close()
	img := jpegURL(t, 1120, 1120)
	spans := make([]float64, clients)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failed []string
	seq := 0
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				mu.Lock()
				loop := fmt.Sprintf("tp %d %d %d", seq, clients*each, clients)
				seq++
				mu.Unlock()
				a, err := askProfileErr(ts.URL, profileRequest{words: 46154, image: img, maxTokens: 2000, stream: true,
					extra: map[string]any{"min_tokens": 2000, "ignore_eos": true}, loop: loop})
				if err != nil {
					mu.Lock()
					failed = append(failed, err.Error())
					mu.Unlock()
					return
				}
				spans[c] += a.sim.E2E * speedup
			}
		}()
	}
	wg.Wait()
	if len(failed) > 0 {
		t.Fatal(failed)
	}
	x := float64(clients*each) / max(spans[0], spans[1], spans[2], spans[3])
	t.Logf("request throughput %.4g req/s at concurrency %d, published %g", x, clients, published)
	if math.Abs(x/published-1) > 0.15 {
		t.Errorf("request throughput %.4g req/s at concurrency %d, published %g", x, clients, published)
	}
}
