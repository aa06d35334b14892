package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
)

// vllmFlags are the `vllm serve` options the fake knows (true: takes a value).
func vllmFlags() flagSpec {
	return flagSpec{
		"--host": true, "--port": true, "--served-model-name": true, "--model": true,
		"--max-model-len": true, "--gpu-memory-utilization": true, "--max-num-seqs": true,
		"--limit-mm-per-prompt": true, "--quantization": true, "-q": true, "--dtype": true,
		"--enable-prefix-caching": false, "--no-enable-prefix-caching": false,
		"--api-key": true, "--tensor-parallel-size": true, "-tp": true,
		"--max-num-batched-tokens": true, "--kv-cache-dtype": true, "--trust-remote-code": false,
		"--enforce-eager": false, "--mm-processor-kwargs": true, "--download-dir": true,
		"--seed": true, "--uvicorn-log-level": true, "--disable-log-requests": false,
		"--disable-log-stats": false, "--swap-space": true,
	}
}

// vllmUsage fails like argparse does: usage line, error, exit status 2.
func vllmUsage(msg string) int {
	fmt.Fprintln(os.Stderr, "usage: vllm serve [model_tag] [options]")
	fmt.Fprintln(os.Stderr, "vllm: error: "+msg)
	return 2
}

func vllmMain(args []string) int {
	if len(args) > 0 && (args[0] == "--version" || args[0] == "-v") {
		fmt.Println(envOr("FAKE_VERSION", "0.11.0"))
		return 0
	}
	cfg, code, ok := parseVllm(args)
	if !ok {
		return code
	}
	fmt.Fprintf(os.Stderr, "INFO vLLM API server version %s\nINFO non-default args: %v\n", envOr("FAKE_VERSION", "0.11.0"), cfg.args)
	if code, ok := common("vllm", cfg.port, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 15.29 GiB of which 312.00 MiB is free."); !ok {
		return code
	}
	crash := "ERROR [core.py:700] EngineCore encountered a fatal error.\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.17 GiB."
	s := &vllmServer{server: newServer("vllm", crash, "ignore_eos", "min_tokens"), cfg: cfg}
	return s.listen(cfg.args["--host"], strconv.Itoa(cfg.port), s.routes())
}

// vllmConfig is what the fake takes from `vllm serve`'s command line.
type vllmConfig struct {
	args          map[string]string // the flags as given, which vLLM logs
	model, served string
	maxLen, port  int
	imageLimit    int
}

// parseVllm reads `vllm serve`'s command line as argparse does. It returns
// false, with the usage on stderr, when the process must exit with code.
func parseVllm(args []string) (vllmConfig, int, bool) {
	fail := func(msg string) (vllmConfig, int, bool) { return vllmConfig{}, vllmUsage(msg), false }
	if len(args) == 0 || args[0] != "serve" {
		return fail("argument subparser: invalid choice (choose from 'chat', 'complete', 'serve', 'bench', 'collect-env', 'run-batch')")
	}
	vals, pos, bad, err := vllmFlags().parse(args[1:], true)
	if err != nil {
		if err.Error() == "unknown" {
			return fail("unrecognized arguments: " + bad)
		}
		return fail(fmt.Sprintf("argument %s: %v", bad, err))
	}
	if len(pos) > 1 {
		return fail("unrecognized arguments: " + strings.Join(pos[1:], " "))
	}
	cfg := vllmConfig{args: vals, model: vals["--model"], imageLimit: 1}
	if len(pos) == 1 {
		cfg.model = pos[0]
	}
	if cfg.model == "" {
		return fail("the following arguments are required: model_tag")
	}
	if msg := vllmBadValue(vals); msg != "" {
		return fail(msg)
	}
	// vLLM reads --limit-mm-per-prompt as JSON; shell quotes left in the
	// value (a string built for a shell) fail here as they do there.
	if v, ok := vals["--limit-mm-per-prompt"]; ok {
		var lim map[string]int
		if err := json.Unmarshal([]byte(v), &lim); err != nil {
			return fail(fmt.Sprintf("argument --limit-mm-per-prompt: Value %s cannot be converted to <function loads>.", v))
		}
		if n, ok := lim["image"]; ok {
			cfg.imageLimit = n
		}
	}
	cfg.served = vals["--served-model-name"]
	if cfg.served == "" {
		cfg.served = cfg.model
	}
	cfg.maxLen = envIntVal(vals["--max-model-len"], 32768)
	cfg.port = envIntVal(vals["--port"], 8000)
	return cfg, 0, true
}

// vllmBadValue is argparse's complaint about the first typed flag whose
// value is not of its type, or "".
func vllmBadValue(vals map[string]string) string {
	for _, f := range []string{"--port", "--max-num-seqs", "--max-model-len"} {
		if v, ok := vals[f]; ok {
			if _, err := strconv.Atoi(v); err != nil {
				return fmt.Sprintf("argument %s: invalid int value: '%s'", f, v)
			}
		}
	}
	if v, ok := vals["--gpu-memory-utilization"]; ok {
		if _, err := strconv.ParseFloat(v, 64); err != nil {
			return fmt.Sprintf("argument --gpu-memory-utilization: invalid float value: '%s'", v)
		}
	}
	if v, ok := vals["--dtype"]; ok {
		switch v {
		case "auto", "half", "float16", "bfloat16", "float", "float32":
		default:
			return fmt.Sprintf("argument --dtype: invalid choice: '%s'", v)
		}
	}
	return ""
}

// vllmServer answers `vllm serve`'s endpoints for one command line.
type vllmServer struct {
	*server
	cfg vllmConfig
}

func (s *vllmServer) routes() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", s.hold(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(200) }))
	if os.Getenv("FAKE_NO_VERSION_API") != "1" {
		mux.HandleFunc("GET /version", s.hold(func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, 200, map[string]string{"version": envOr("FAKE_VERSION", "0.11.0")})
		}))
	}
	mux.HandleFunc("GET /v1/models", s.hold(s.models))
	mux.HandleFunc("POST /v1/chat/completions", s.hold(s.chat))
	return mux
}

// hold keeps a request unanswered until the engine is built: the socket
// accepts but nothing answers.
func (s *vllmServer) hold(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-s.ready:
			h(w, r)
		case <-r.Context().Done():
		}
	}
}

func (s *vllmServer) models(w http.ResponseWriter, r *http.Request) {
	if !authorized(w, r, s.cfg.args["--api-key"]) {
		return
	}
	writeJSON(w, 200, map[string]any{"object": "list", "data": []any{map[string]any{
		"id": s.cfg.served, "object": "model", "owned_by": "vllm", "root": s.cfg.model, "max_model_len": s.cfg.maxLen}}})
}

func (s *vllmServer) chat(w http.ResponseWriter, r *http.Request) {
	if !authorized(w, r, s.cfg.args["--api-key"]) {
		return
	}
	defer s.afterRequest()
	var req chatRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeJSON(w, 400, vllmError(err.Error()))
		return
	}
	if req.Model != s.cfg.served {
		writeJSON(w, 404, map[string]any{"object": "error", "message": fmt.Sprintf("The model `%s` does not exist.", req.Model), "type": "NotFoundError", "param": nil, "code": 404})
		return
	}
	imgs := req.images()
	if len(imgs) > s.cfg.imageLimit {
		msg := fmt.Sprintf("At most %d image(s) may be provided in one request.", s.cfg.imageLimit)
		fmt.Fprintf(os.Stderr, "ERROR serving_chat.py: Error in preprocessing prompt inputs: %s\n", msg)
		fmt.Fprintf(os.Stderr, "INFO: %s - \"POST /v1/chat/completions HTTP/1.1\" 400 Bad Request\n", r.RemoteAddr)
		writeJSON(w, 400, vllmError(msg))
		return
	}
	streamAnswer(w, req, req.answerTokens(s.honours), s.cfg.served, 64+1200*len(imgs), nil)
}

func vllmError(msg string) map[string]any {
	return map[string]any{"object": "error", "message": msg, "type": "BadRequestError", "param": nil, "code": 400}
}

func authorized(w http.ResponseWriter, r *http.Request, key string) bool {
	if key == "" || r.Header.Get("Authorization") == "Bearer "+key {
		return true
	}
	writeJSON(w, 401, map[string]string{"error": "Unauthorized"})
	return false
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func envIntVal(v string, def int) int {
	if n, err := strconv.Atoi(v); err == nil {
		return n
	}
	return def
}
