package simengine

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/vlmfleet/vlmfleet/internal/testutil"
)

func mustLookup(t testing.TB, device, model, quant, engine string) Profile {
	t.Helper()
	p, err := Lookup(device, model, quant, engine)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// jpegURL is a data URL of a w×h JPEG.
func jpegURL(t testing.TB, w, h int) string {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y += 7 {
		for x := 0; x < w; x += 5 {
			img.Set(x, y, color.RGBA{uint8(x), uint8(y), 90, 255})
		}
	}
	var b bytes.Buffer
	if err := jpeg.Encode(&b, img, &jpeg.Options{Quality: 80}); err != nil {
		t.Fatal(err)
	}
	return "data:image/jpeg;base64," + base64.StdEncoding.EncodeToString(b.Bytes())
}

func chatBody(model string, stream bool, maxTokens int, urls ...string) []byte {
	parts := []map[string]any{{"type": "text", "text": "Describe the scene."}}
	for _, u := range urls {
		parts = append(parts, map[string]any{"type": "image_url", "image_url": map[string]string{"url": u}})
	}
	req := map[string]any{
		"model": model, "stream": stream, "max_tokens": maxTokens,
		"messages": []map[string]any{{"role": "user", "content": parts}},
	}
	if stream {
		req["stream_options"] = map[string]bool{"include_usage": true}
	}
	b, _ := json.Marshal(req)
	return b
}

// sseEvents reads every data: payload of a stream.
func sseEvents(t testing.TB, r io.Reader) []string {
	t.Helper()
	var out []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if p, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			out = append(out, p)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

type chunk struct {
	Choices []struct {
		Delta        map[string]json.RawMessage `json:"delta"`
		FinishReason *string                    `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
	Timings map[string]float64 `json:"timings"`
}

func post(t testing.TB, url string, body []byte) *http.Response {
	t.Helper()
	resp, err := http.Post(url+"/v1/chat/completions", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func TestStreamVLLM(t *testing.T) {
	p := mustLookup(t, "RTX PRO 6000", "Qwen3-VL-4B-Instruct", "BF16", "vllm")
	ts := httptest.NewServer(New(p, Options{ServedName: "qwen", Speedup: 50}).Handler())
	defer ts.Close()
	resp := post(t, ts.URL, chatBody("qwen", true, 16, jpegURL(t, 1280, 720)))
	defer resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("status %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	ev := sseEvents(t, resp.Body)
	if ev[len(ev)-1] != "[DONE]" {
		t.Fatalf("last event %q, want [DONE]", ev[len(ev)-1])
	}
	var chunks []chunk
	for _, e := range ev[:len(ev)-1] {
		var c chunk
		if err := json.Unmarshal([]byte(e), &c); err != nil {
			t.Fatalf("chunk %q: %v", e, err)
		}
		chunks = append(chunks, c)
	}
	// role chunk with "content":"", 16 tokens (the last with finish_reason), usage.
	if len(chunks) != 18 {
		t.Fatalf("%d chunks, want 18: %v", len(chunks), ev)
	}
	if string(chunks[0].Choices[0].Delta["content"]) != `""` || string(chunks[0].Choices[0].Delta["role"]) != `"assistant"` {
		t.Errorf("first chunk %s, want role with empty content", ev[0])
	}
	var text strings.Builder
	for i, c := range chunks[1:17] {
		var s string
		_ = json.Unmarshal(c.Choices[0].Delta["content"], &s)
		if s == "" {
			t.Errorf("token chunk %d empty", i)
		}
		text.WriteString(s)
		if fin := c.Choices[0].FinishReason; (fin != nil) != (i == 15) {
			t.Errorf("token chunk %d finish_reason %v", i, fin)
		}
	}
	if !strings.HasPrefix(text.String(), "The image shows") {
		t.Errorf("answer %q", text.String())
	}
	u := chunks[17]
	if len(u.Choices) != 0 || u.Usage == nil || u.Usage.CompletionTokens != 16 {
		t.Fatalf("usage chunk %s", ev[17])
	}
	// 1280×720 at 32 px per token is 40×23 tokens, plus the text.
	if u.Usage.PromptTokens < 920 || u.Usage.PromptTokens > 940 {
		t.Errorf("prompt_tokens %d, want 920 image tokens plus a few text ones", u.Usage.PromptTokens)
	}
}

// runLlama streams one llama.cpp request and returns its timings.
func runLlama(t testing.TB, url string, maxTokens int, images ...string) map[string]float64 {
	t.Helper()
	resp := post(t, url, chatBody("", true, maxTokens, images...))
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	ev := sseEvents(t, resp.Body)
	if !strings.Contains(ev[0], `"content":null`) || !strings.Contains(ev[0], `"role":"assistant"`) {
		t.Errorf("first chunk %s, want role with content null", ev[0])
	}
	var last chunk
	if err := json.Unmarshal([]byte(ev[len(ev)-2]), &last); err != nil {
		t.Fatal(err)
	}
	if last.Timings == nil || last.Usage == nil {
		t.Fatalf("final chunk without timings or usage: %s", ev[len(ev)-2])
	}
	if int(last.Timings["predicted_n"]) != maxTokens || last.Usage.CompletionTokens != maxTokens {
		t.Errorf("predicted_n %v, completion_tokens %d, want %d", last.Timings["predicted_n"], last.Usage.CompletionTokens, maxTokens)
	}
	return last.Timings
}

func TestStreamLlamaCppTimings(t *testing.T) {
	p := mustLookup(t, "Jetson AGX Orin", "Qwen3-VL-4B-Instruct", "", "")
	// A low speed-up: the model's clock follows the real one, so a server
	// goroutine that runs late (the race detector, a loaded machine) would
	// be multiplied by a high one.
	ts := httptest.NewServer(New(p, Options{Speedup: 4, Seed: 3}).Handler())
	defer ts.Close()
	tm := runLlama(t, ts.URL, 32, jpegURL(t, 1280, 720))
	// The timings are the model's own, in simulated time: exact up to jitter.
	if ms := tm["prompt_ms"]; ms < 0.97*1310 || ms > 1.05*1310 {
		t.Errorf("prompt_ms %.0f, want about 1310 (seed: 1.31 s)", ms)
	}
	if tps := tm["predicted_per_second"]; tps < 0.95*28.4 || tps > 1.03*28.4 {
		t.Errorf("predicted_per_second %.1f, want about 28.4", tps)
	}
}

// TestRequestsCompete shows the concurrency effect emerging from the shared
// model: four requests sent together queue for the prefill (llama.cpp on a
// Jetson encodes images one at a time), so the last one to start waited for
// about three others. It runs near real time (speedup 2) so that the four
// arrive well within one prefill even on a loaded machine.
func TestRequestsCompete(t *testing.T) {
	p := mustLookup(t, "Jetson AGX Orin", "Gemma-4-E4B-it", "Q4_0", "llama.cpp") // 0.86 s alone
	ts := httptest.NewServer(New(p, Options{Speedup: 2}).Handler())
	defer ts.Close()
	img := jpegURL(t, 1280, 720)
	alone := runLlama(t, ts.URL, 2, img)["prompt_ms"]
	start := make(chan struct{})
	var wg sync.WaitGroup
	got := make([]float64, 4)
	for i := range got {
		wg.Go(func() {
			<-start
			got[i] = runLlama(t, ts.URL, 2, img)["prompt_ms"]
		})
	}
	close(start)
	wg.Wait()
	slowest := 0.0
	for _, g := range got {
		slowest = max(slowest, g)
	}
	if slowest < 2.5*alone {
		t.Errorf("prompt_ms of 4 requests sent together %v, alone %.0f: want the last to wait for the others", got, alone)
	}
}

func TestNonStreaming(t *testing.T) {
	p := mustLookup(t, "Jetson Orin NX", "Gemma-4-E2B-it", "", "")
	ts := httptest.NewServer(New(p, Options{Speedup: 100}).Handler())
	defer ts.Close()
	resp := post(t, ts.URL, chatBody("x", false, 5, jpegURL(t, 854, 480), jpegURL(t, 854, 480)))
	defer resp.Body.Close()
	var v struct {
		Object  string `json:"object"`
		Choices []struct {
			Message struct{ Content string } `json:"message"`
		} `json:"choices"`
		Usage struct {
			PromptTokens     int `json:"prompt_tokens"`
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
		Timings map[string]float64 `json:"timings"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		t.Fatal(err)
	}
	if v.Object != "chat.completion" || len(strings.Fields(v.Choices[0].Message.Content)) != 5 || v.Timings == nil {
		t.Errorf("response %+v", v)
	}
	// Gemma: a fixed 256 tokens per image.
	if v.Usage.PromptTokens < 512 || v.Usage.PromptTokens > 530 || v.Usage.CompletionTokens != 5 {
		t.Errorf("usage %+v", v.Usage)
	}
}

func TestRefusals(t *testing.T) {
	nx := mustLookup(t, "Jetson Orin NX", "Qwen3-VL-4B-Instruct", "FP8", "vLLM") // 3 images, up to 1080p
	srv := New(nx, Options{ServedName: "q", Speedup: 100})
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	img := jpegURL(t, 64, 36)
	var pngBuf bytes.Buffer
	_ = png.Encode(&pngBuf, image.NewGray(image.Rect(0, 0, 2560, 1440)))
	png2K := "data:image/png;base64," + base64.StdEncoding.EncodeToString(pngBuf.Bytes())
	cases := []struct {
		name string
		body []byte
		code int
		want string
	}{
		{"bad JSON", []byte(`{"messages":[`), 400, "invalid JSON"},
		{"no messages", []byte(`{"messages":[]}`), 400, "messages"},
		{"bad base64", chatBody("q", true, 8, "data:image/jpeg;base64,@@@@"), 400, "base64"},
		{"not an image", chatBody("q", true, 8, "data:text/plain;base64,aGVsbG8="), 400, "text/plain"},
		{"image bytes not an image", chatBody("q", true, 8, "data:image/jpeg;base64,aGVsbG8="), 400, "not a JPEG or PNG"},
		{"remote URL", chatBody("q", true, 8, "http://example.com/a.jpg"), 400, "data URL"},
		{"too many images", chatBody("q", true, 8, img, img, img, img), 400, "At most 3 image(s)"},
		{"2K not measured", chatBody("q", true, 8, png2K), 400, "1080p"},
		{"max_tokens 0", chatBody("q", true, 0, img), 400, "max_tokens"},
		{"unknown model", chatBody("other", true, 8, img), 404, "does not exist"},
	}
	for _, c := range cases {
		resp := post(t, ts.URL, c.body)
		var e struct {
			Error struct {
				Message string `json:"message"`
				Type    string `json:"type"`
				Code    int    `json:"code"`
			} `json:"error"`
		}
		err := json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		if err != nil || resp.StatusCode != c.code || e.Error.Code != c.code || e.Error.Type == "" || !strings.Contains(e.Error.Message, c.want) {
			t.Errorf("%s: status %d, error %+v (%v); want %d mentioning %q", c.name, resp.StatusCode, e.Error, err, c.code, c.want)
		}
		// A refused request left the model before its refusal was written.
		srv.mu.Lock()
		queued := len(srv.m.prefillQ) + len(srv.m.decoding)
		srv.mu.Unlock()
		if queued != 0 {
			t.Errorf("%s: %d requests left in the model after the refusal", c.name, queued)
		}
	}
	if code := testutil.Status(t, http.MethodGet, ts.URL+"/v1/chat/completions", ""); code != http.StatusMethodNotAllowed {
		t.Errorf("GET chat: %d", code)
	}
}

func TestFailEvery(t *testing.T) {
	p := mustLookup(t, "RTX PRO 6000", "Cosmos-Reason2-2B", "", "")
	ts := httptest.NewServer(New(p, Options{Speedup: 100, FailEvery: 2}).Handler())
	defer ts.Close()
	var codes []int
	for range 4 {
		resp := post(t, ts.URL, chatBody("", true, 2, jpegURL(t, 64, 36)))
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		codes = append(codes, resp.StatusCode)
	}
	if fmt.Sprint(codes) != "[200 500 200 500]" {
		t.Errorf("status codes %v, want every second request to fail", codes)
	}
}

func TestModelsAndHealth(t *testing.T) {
	p := mustLookup(t, "RTX PRO 6000", "Qwen3-VL-8B-Instruct", "Q8_0", "llama.cpp")
	ts := httptest.NewServer(New(p, Options{ServedName: "served-8b"}).Handler())
	defer ts.Close()
	for path, want := range map[string]string{"/v1/models": `"id":"served-8b"`, "/health": `{"status":"ok"}`} {
		resp, err := http.Get(ts.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(b), want) {
			t.Errorf("%s: %d %s, want %s", path, resp.StatusCode, b, want)
		}
	}
}

// TestClientGoneLeavesModel checks that a request whose client disconnects
// stops taking the device's time.
func TestClientGoneLeavesModel(t *testing.T) {
	p := mustLookup(t, "Jetson AGX Orin", "Cosmos3-Edge", "", "")
	s := New(p, Options{Speedup: 20})
	ts := httptest.NewServer(s.Handler())
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, ts.URL+"/v1/chat/completions",
		bytes.NewReader(chatBody("", true, 4000, jpegURL(t, 1280, 720))))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(resp.Body)
	for i := 0; i < 3; i++ { // role chunk, blank line, first token
		if _, err := br.ReadString('\n'); err != nil {
			t.Fatal(err)
		}
	}
	cancel()
	resp.Body.Close()
	ts.Close() // waits for the handler to return
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := len(s.m.prefillQ) + len(s.m.decoding); n != 0 {
		t.Errorf("%d requests still in the model after their client left", n)
	}
}

func TestServeGracefulShutdown(t *testing.T) {
	p := mustLookup(t, "Jetson Orin NX", "Cosmos-Reason2-2B", "", "")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- New(p, Options{Speedup: 10}).Serve(ctx, ln) }()
	url := "http://" + ln.Addr().String()
	resp := post(t, url, chatBody("", true, 100000/100, jpegURL(t, 1280, 720)))
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	cancel() // mid-stream
	testutil.Returned(t, done, "Serve")
}

func TestLookup(t *testing.T) {
	if n := len(Profiles()); n != 38 {
		t.Errorf("%d profiles, want the seed's 38 configuration blocks", n)
	}
	p, err := Lookup("jetson agx orin", "Qwen3-VL-8B-Instruct", "", "")
	if err != nil || p.Quantization != "Q4_K_M" {
		t.Errorf("first match: %+v %v", p, err)
	}
	if p, err := Lookup("RTX PRO 6000", "Qwen3-VL-4B-Instruct", "", "llamacpp"); err != nil || p.Engine != EngineLlamaCpp {
		t.Errorf("engine alias: %+v %v", p, err)
	}
	_, err = Lookup("RTX PRO 6000", "Qwen3-VL-4B-Instruct", "NVFP4", "")
	if err == nil || !strings.Contains(err.Error(), "BF16 vLLM") || !strings.Contains(err.Error(), "Q8_0 llama.cpp") {
		t.Errorf("wrong quantization: %v", err)
	}
	_, err = Lookup("Jetson Orin NX", "nope", "", "")
	if err == nil || !strings.Contains(err.Error(), "Gemma-4-E2B-it") {
		t.Errorf("unknown model: %v", err)
	}
	_, err = Lookup("Jetson Nano", "x", "", "")
	if err == nil || !strings.Contains(err.Error(), "Jetson AGX Orin") {
		t.Errorf("unknown device: %v", err)
	}
	if got := len(ProfilesFor("rtx pro 6000 max-q")); got != 2 {
		t.Errorf("ProfilesFor Max-Q: %d, want 2", got)
	}
}

func FuzzParseRequest(f *testing.F) {
	f.Add(chatBody("m", true, 16, jpegURL(f, 32, 18)))
	f.Add([]byte(`{"messages":[{"role":"user","content":"hi"}],"max_tokens":3}`))
	f.Add([]byte(`{"messages":[{"role":"user","content":[{"type":"image_url","image_url":"data:image/png;base64,iVBORw0KGgo="}]}]}`))
	f.Add([]byte(`{"messages":[{"content":null}],"max_completion_tokens":-1}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := parseRequest(body)
		if err != nil {
			return
		}
		if r.maxTokens < 1 || r.textTokens < 0 {
			t.Fatalf("accepted %+v", r)
		}
		for _, d := range r.images {
			if d.X < 1 || d.Y < 1 {
				t.Fatalf("image %v", d)
			}
		}
	})
}

func ExampleProfile_Key() {
	p, _ := Lookup("Jetson AGX Orin", "Cosmos3-Edge", "", "")
	fmt.Println(p.Key())
	// Output: Jetson AGX Orin/Cosmos3-Edge/BF16/vLLM
}
