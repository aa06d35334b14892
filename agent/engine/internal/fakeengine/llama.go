package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	_ "image/jpeg" // request images
	_ "image/png"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"

	"github.com/vlmfleet/vlmfleet/internal/testutil/fakellama"
)

// llamaFlags are the llama-server options the fake knows (true: takes a value).
func llamaFlags() flagSpec {
	return flagSpec{
		"-m": true, "--model": true, "--mmproj": true, "-mm": true,
		"--host": true, "--port": true,
		"-ngl": true, "--gpu-layers": true, "--n-gpu-layers": true,
		"-c": true, "--ctx-size": true, "-np": true, "--parallel": true,
		"-a": true, "--alias": true, "--api-key": true,
		"-t": true, "--threads": true, "-b": true, "--batch-size": true, "-ub": true, "--ubatch-size": true,
		"-fa": true, "--flash-attn": true, "-ctk": true, "--cache-type-k": true, "-ctv": true, "--cache-type-v": true,
		"--image-min-tokens": true, "--image-max-tokens": true,
		"--metrics": false, "--no-webui": false, "--jinja": false, "--no-mmap": false, "--mlock": false,
		"-cb": false, "--cont-batching": false, "-kvu": false, "--kv-unified": false,
	}
}

// llamaCanon maps short and long spellings to one name.
func llamaCanon(vals map[string]string) map[string]string {
	aliases := map[string]string{
		"--model": "-m", "-mm": "--mmproj", "--gpu-layers": "-ngl", "--n-gpu-layers": "-ngl",
		"--ctx-size": "-c", "--parallel": "-np", "--alias": "-a",
	}
	out := map[string]string{}
	for k, v := range vals {
		if c, ok := aliases[k]; ok {
			k = c
		}
		out[k] = v
	}
	return out
}

func llamaMain(args []string) int {
	if len(args) == 1 && args[0] == "--version" {
		fmt.Fprintln(os.Stderr, envOr("FAKE_VERSION", "version: 6123 (abc1234)"))
		fmt.Fprintln(os.Stderr, "built with cc (Ubuntu 13.3.0) 13.3.0 for x86_64-linux-gnu")
		return 0
	}
	cfg, code, ok := parseLlama(args)
	if !ok {
		return code
	}
	fmt.Fprintf(os.Stderr, "build: 6123 (abc1234) with cc for x86_64-linux-gnu\nsystem info: n_threads = 2\nmain: HTTP server is listening, hostname: %s, port: %d\nsrv load_model: loading model '%s'\n", cfg.host, cfg.port, cfg.model)
	oom := "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 9120.00 MiB on device 0: cudaMalloc failed: out of memory\n" +
		"llama_init_from_model: failed to initialize the context: failed to allocate buffer for kv cache"
	if code, ok := common("llama-server", cfg.port, oom); !ok {
		return code
	}
	s := newLlamaServer(cfg)
	return s.listen(cfg.host, strconv.Itoa(cfg.port), s.routes())
}

// llamaConfig is what the fake takes from llama-server's command line.
type llamaConfig struct {
	host, apiKey  string
	model, mmproj string
	alias         string // the model's name in answers: -a, else the model path
	metrics       bool
	port, np      int
	slotCtx       int // -c is shared out among the -np slots
}

// parseLlama reads llama-server's command line and its model files.
// It returns false, with the complaint on stderr, when the process must
// exit with code.
func parseLlama(args []string) (llamaConfig, int, bool) {
	fail := func(format string, a ...any) (llamaConfig, int, bool) {
		fmt.Fprintf(os.Stderr, format, a...)
		return llamaConfig{}, 1, false
	}
	raw, pos, bad, err := llamaFlags().parse(args, false)
	if err != nil {
		if err.Error() == "unknown" {
			return fail("error: invalid argument: %s\n", bad)
		}
		return fail("error while handling argument \"%s\": expected value for argument\n", bad)
	}
	if len(pos) > 0 {
		return fail("error: invalid argument: %s\n", pos[0])
	}
	vals := llamaCanon(raw)
	ints := map[string]int{"-ngl": -1, "-c": 4096, "-np": 1, "--port": 8080}
	for _, k := range []string{"-ngl", "-c", "-np", "--port"} { // in order: one error for one command line
		if v, ok := vals[k]; ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				return fail("error while handling argument \"%s\": stoi\n", k)
			}
			ints[k] = n
		}
	}
	model, mmproj := vals["-m"], vals["--mmproj"]
	for _, f := range []string{model, mmproj} {
		if f == "" {
			continue
		}
		if _, err := os.Stat(f); err != nil {
			return fail("gguf_init_from_file: failed to open GGUF file '%s'\nllama_model_load: error loading model: %v\nmain: exiting due to model loading error\n", f, err)
		}
	}
	if model == "" {
		return fail("error: no model given (-m)\n")
	}
	cfg := llamaConfig{
		host: vals["--host"], apiKey: vals["--api-key"],
		model: model, mmproj: mmproj, alias: vals["-a"],
		metrics: vals["--metrics"] == "true",
		port:    ints["--port"], np: max(ints["-np"], 1),
	}
	cfg.slotCtx = ints["-c"] / cfg.np
	if cfg.alias == "" {
		cfg.alias = model
	}
	return cfg, 0, true
}

// llamaServer answers llama-server's endpoints for one command line.
type llamaServer struct {
	*server
	cfg   llamaConfig
	slots chan struct{} // len is the requests being processed
	cache fakellama.Cache
}

func newLlamaServer(cfg llamaConfig) *llamaServer {
	crash := "CUDA error: out of memory\n  current device: 0, in function ggml_cuda_pool_malloc"
	return &llamaServer{server: newServer("llama-server", crash, "ignore_eos"), cfg: cfg, slots: make(chan struct{}, cfg.np)}
}

func (s *llamaServer) routes() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", s.health)
	mux.HandleFunc("GET /props", s.props)
	mux.HandleFunc("GET /metrics", s.metrics)
	mux.HandleFunc("GET /v1/models", s.models)
	mux.HandleFunc("POST /v1/chat/completions", s.chat)
	return mux
}

// loading answers 503 until the model is loaded, reporting whether it did.
func (s *llamaServer) loading(w http.ResponseWriter) bool {
	if s.isReady() {
		return false
	}
	writeJSON(w, 503, map[string]any{"error": map[string]any{"code": 503, "message": "Loading model", "type": "unavailable_error"}})
	return true
}

func (s *llamaServer) health(w http.ResponseWriter, r *http.Request) {
	if !s.loading(w) {
		writeJSON(w, 200, map[string]string{"status": "ok"})
	}
}

func (s *llamaServer) props(w http.ResponseWriter, r *http.Request) {
	if s.loading(w) || !authorized(w, r, s.cfg.apiKey) {
		return
	}
	writeJSON(w, 200, map[string]any{
		"default_generation_settings": map[string]any{"n_ctx": s.cfg.slotCtx, "params": map[string]any{"n_predict": -1}},
		"total_slots":                 s.cfg.np,
		"model_path":                  s.cfg.model,
		"modalities":                  map[string]bool{"vision": s.cfg.mmproj != "", "audio": false},
		"build_info":                  "b6123-abc1234",
		"chat_template":               "{{ messages }}",
	})
}

func (s *llamaServer) metrics(w http.ResponseWriter, r *http.Request) {
	if s.loading(w) {
		return
	}
	if !s.cfg.metrics {
		writeJSON(w, 501, map[string]any{"error": map[string]any{"code": 501, "message": "This server does not support metrics endpoint. Start it with `--metrics`", "type": "not_supported_error"}})
		return
	}
	s.mu.Lock()
	n := s.handled
	s.mu.Unlock()
	fmt.Fprintf(w, "# HELP llamacpp:requests_processing Number of requests processing.\n# TYPE llamacpp:requests_processing gauge\nllamacpp:requests_processing %d\n# TYPE llamacpp:n_decode_total counter\nllamacpp:n_decode_total %d\n", len(s.slots), n)
}

func (s *llamaServer) models(w http.ResponseWriter, r *http.Request) {
	if s.loading(w) || !authorized(w, r, s.cfg.apiKey) {
		return
	}
	writeJSON(w, 200, map[string]any{"object": "list", "data": []any{map[string]any{"id": s.cfg.alias, "object": "model", "owned_by": "llamacpp"}}})
}

func (s *llamaServer) chat(w http.ResponseWriter, r *http.Request) {
	if s.loading(w) || !authorized(w, r, s.cfg.apiKey) {
		return
	}
	s.slots <- struct{}{} // a request beyond -np waits for a slot, as in llama-server
	defer func() { <-s.slots }()
	defer s.afterRequest()
	var req chatRequest
	body, err := io.ReadAll(r.Body)
	if err == nil {
		err = json.Unmarshal(body, &req)
	}
	if err != nil {
		writeJSON(w, 400, llamaError(400, err.Error(), "invalid_request_error"))
		return
	}
	imgs := req.images()
	if len(imgs) > 0 && s.cfg.mmproj == "" {
		writeJSON(w, 500, llamaError(500, "image input is not supported - hint: if this is unexpected, you may need to provide the mmproj", "server_error"))
		return
	}
	prompt := 64
	for _, u := range imgs {
		t, err := imageTokens(u)
		if err != nil {
			writeJSON(w, 400, llamaError(400, "Failed to load image or audio file", "invalid_request_error"))
			return
		}
		prompt += t
	}
	if prompt > s.cfg.slotCtx {
		fmt.Fprintf(os.Stderr, "srv send_error: task id = 0, error: the request exceeds the available context size (%d > %d)\n", prompt, s.cfg.slotCtx)
		writeJSON(w, 400, llamaError(400, "the request exceeds the available context size, try increasing it", "exceed_context_size_error"))
		return
	}
	if !req.Stream {
		streamAnswer(w, req, req.answerTokens(s.honours), s.cfg.alias, prompt, map[string]any{"timings": map[string]float64{"prompt_n": float64(prompt), "prompt_ms": 100, "predicted_n": 4, "predicted_ms": 40}})
		return
	}
	// A streamed answer is shaped as a real build's (the role chunk
	// with the first token, usage and timings in a final chunk), and a
	// repeated prompt comes from the cache unless cache_prompt is false.
	cached := s.cache.Cached(string(body), req.CachePrompt == nil || *req.CachePrompt, prompt)
	fakellama.WriteStream(w, s.cfg.alias, req.answerTokens(s.honours), prompt, cached)
}

func llamaError(code int, msg, typ string) map[string]any {
	return map[string]any{"error": map[string]any{"code": code, "message": msg, "type": typ}}
}

// imageTokens counts a data-URL image as 28×28-pixel tokens, like a
// Qwen2.5-VL projector.
func imageTokens(u string) (int, error) {
	_, data, ok := strings.Cut(u, ";base64,")
	if !ok {
		return 0, fmt.Errorf("not a base64 data URL")
	}
	b, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		return 0, err
	}
	cfg, _, err := image.DecodeConfig(bytes.NewReader(b))
	if err != nil {
		return 0, err
	}
	return (cfg.Width+27)/28*((cfg.Height+27)/28) + 2, nil
}
