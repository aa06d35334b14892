// Command fakeengine stands in for the programs of the engine kinds in
// the engine package's tests: installed as `llama-server` it plays
// llama.cpp's, told a persona (FAKE_PERSONA, package persona) by a kind's
// test it plays that kind's program, and otherwise it is `vllm`. It parses
// the program's real command line (refusing unknown flags as the real one
// does), serves its real endpoints, and misbehaves on request through
// FAKE_* variables:
//
//	FAKE_STARTUP_MS      sleep before binding the port (slow start)
//	FAKE_LOADING_MS      after binding, stay not-ready this long (llama: 503
//	                     "Loading model"; vllm: hold requests unanswered)
//	FAKE_FAIL=oom|crash  exit 1 after FAKE_STARTUP_MS, printing a CUDA OOM or a traceback
//	FAKE_CRASH_AFTER=K   exit 1 with a CUDA OOM after the K-th chat request
//	FAKE_BIND_ONCE_FILE  on the first run (file absent) exit as if the port were taken,
//	                     writing its pid to the file; FAKE_BIND_ONCE_HANG=1 makes that
//	                     first run stay alive unready instead (a front end that failed to
//	                     bind while its engine core still holds the GPU)
//	FAKE_IGNORE_TERM=1   ignore SIGTERM
//	FAKE_CHILD_PIDFILE   spawn a worker child (same process group) and write its pid;
//	                     FAKE_CHILD_IGNORE_TERM=1 makes it ignore SIGTERM
//	FAKE_ARGV_FILE       write the argv received, as JSON
//	FAKE_NO_VERSION_API=1  vllm: no /version endpoint
//	FAKE_TOKENS          tokens per answer (default 4)
//	FAKE_TOKEN_MS        vllm: generate a token every this many ms (default: at once)
//	FAKE_BURST=K         vllm: hold the first K tokens and write them in one write,
//	                     as a server or proxy that delivers in bursts
package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/vlmfleet/vlmfleet/agent/engine/internal/fakeengine/persona"
)

func main() {
	if os.Getenv("FAKE_ROLE") == "child" {
		runChild()
		return
	}
	if p := os.Getenv("FAKE_ARGV_FILE"); p != "" {
		b, _ := json.Marshal(os.Args)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "fakeengine:", err)
			os.Exit(99)
		}
	}
	if s := os.Getenv(persona.Env); s != "" {
		p, err := persona.Decode(s)
		if err != nil {
			fmt.Fprintln(os.Stderr, "fakeengine:", err)
			os.Exit(99)
		}
		os.Exit(personaMain(p, os.Args[1:]))
	}
	if strings.HasPrefix(filepath.Base(os.Args[0]), "llama-server") {
		os.Exit(llamaMain(os.Args[1:]))
	}
	os.Exit(vllmMain(os.Args[1:]))
}

// flagSpec says whether each known flag takes a value.
type flagSpec map[string]bool

// parse splits args into flag values and positionals; "--flag=value" is
// accepted where allowEq. It returns the first offending argument.
func (s flagSpec) parse(args []string, allowEq bool) (map[string]string, []string, string, error) {
	vals := map[string]string{}
	var pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") || a == "-" {
			pos = append(pos, a)
			continue
		}
		name, val, hasEq := a, "", false
		if allowEq {
			name, val, hasEq = strings.Cut(a, "=")
		}
		takes, ok := s[name]
		if !ok {
			return nil, nil, a, fmt.Errorf("unknown")
		}
		switch {
		case !takes && hasEq:
			return nil, nil, a, fmt.Errorf("ignored explicit argument %q", val)
		case !takes:
			vals[name] = "true"
		case hasEq:
			vals[name] = val
		case i+1 < len(args):
			i++
			vals[name] = args[i]
		default:
			return nil, nil, a, fmt.Errorf("expected one argument")
		}
	}
	return vals, pos, "", nil
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return v
	}
	return def
}

func sleepMS(name string) {
	if ms := envInt(name, 0); ms > 0 {
		time.Sleep(time.Duration(ms) * time.Millisecond)
	}
}

// common sets up signals, the worker child and the scripted start failures
// (oom is what the program prints when CUDA memory runs out). It returns
// false when the process must exit with code.
func common(role string, port int, oom string) (int, bool) {
	if os.Getenv("FAKE_IGNORE_TERM") == "1" {
		signal.Ignore(syscall.SIGTERM)
	} else {
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, syscall.SIGTERM, syscall.SIGINT)
		go func() {
			s := <-ch
			fmt.Fprintf(os.Stderr, "%s: received %v, shutting down\n", role, s)
			os.Exit(0)
		}()
	}
	if p := os.Getenv("FAKE_CHILD_PIDFILE"); p != "" {
		self, err := os.Executable()
		if err != nil {
			fmt.Fprintln(os.Stderr, "spawn worker:", err)
			return 1, false
		}
		cmd := exec.Command(self)
		cmd.Env = append(os.Environ(), "FAKE_ROLE=child")
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		if err := cmd.Start(); err != nil {
			fmt.Fprintln(os.Stderr, "spawn worker:", err)
			return 1, false
		}
		if err := os.WriteFile(p, []byte(strconv.Itoa(cmd.Process.Pid)), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "pidfile:", err)
			return 1, false
		}
	}
	sleepMS("FAKE_STARTUP_MS")
	if f := os.Getenv("FAKE_BIND_ONCE_FILE"); f != "" {
		if _, err := os.Stat(f); err != nil {
			_ = os.WriteFile(f, []byte(strconv.Itoa(os.Getpid())), 0o644)
			fmt.Fprintf(os.Stderr, "ERROR: [Errno 98] error while attempting to bind on address ('127.0.0.1', %d): address already in use\n", port)
			if os.Getenv("FAKE_BIND_ONCE_HANG") == "1" {
				for {
					time.Sleep(time.Hour)
				}
			}
			return 1, false
		}
	}
	switch os.Getenv("FAKE_FAIL") {
	case "oom":
		fmt.Fprintln(os.Stderr, oom)
		return 1, false
	case "crash":
		fmt.Fprintln(os.Stderr, "Traceback (most recent call last):\nRuntimeError: Engine core initialization failed. See root cause above.")
		return 1, false
	}
	return 0, true
}

func runChild() {
	if os.Getenv("FAKE_CHILD_IGNORE_TERM") == "1" {
		signal.Ignore(syscall.SIGTERM)
	}
	for {
		time.Sleep(time.Hour)
	}
}

// server is the HTTP side shared by the roles.
type server struct {
	role string
	// crash is what the program prints when it dies of CUDA memory
	// while serving (FAKE_CRASH_AFTER).
	crash string
	// honours are the request fields that set the answer's length that
	// the program takes (chatRequest.answerTokens).
	honours map[string]bool
	ready   chan struct{}
	mu      sync.Mutex
	handled int
}

func newServer(role, crash string, honours ...string) *server {
	s := &server{role: role, crash: crash, honours: map[string]bool{}, ready: make(chan struct{})}
	for _, h := range honours {
		s.honours[h] = true
	}
	return s
}

func (s *server) isReady() bool {
	select {
	case <-s.ready:
		return true
	default:
		return false
	}
}

// listen binds host:port, then marks the server ready after FAKE_LOADING_MS.
func (s *server) listen(host, port string, h http.Handler) int {
	ln, err := net.Listen("tcp", net.JoinHostPort(host, port))
	if err != nil {
		fmt.Fprintf(os.Stderr, "ERROR: [Errno 98] error while attempting to bind on address (%q, %s): address already in use (%v)\n", host, port, err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "%s: listening on http://%s\n", s.role, ln.Addr())
	go func() {
		sleepMS("FAKE_LOADING_MS")
		close(s.ready)
		fmt.Fprintf(os.Stderr, "%s: model loaded, ready\n", s.role)
	}()
	if err := http.Serve(ln, h); err != nil {
		fmt.Fprintln(os.Stderr, "serve:", err)
		return 1
	}
	return 0
}

// afterRequest crashes the engine on the K-th request when asked.
func (s *server) afterRequest() {
	s.mu.Lock()
	s.handled++
	n := s.handled
	s.mu.Unlock()
	if k := envInt("FAKE_CRASH_AFTER", 0); k > 0 && n >= k {
		fmt.Fprintln(os.Stderr, s.crash)
		os.Exit(1)
	}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// chatRequest is the part of an OpenAI chat request the fake reads.
type chatRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Stream        bool  `json:"stream"`
	MaxTokens     int   `json:"max_tokens"`
	MinTokens     int   `json:"min_tokens"`
	IgnoreEOS     bool  `json:"ignore_eos"`
	CachePrompt   *bool `json:"cache_prompt"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
}

// images returns the data URLs of the request's images.
func (c chatRequest) images() []string {
	var out []string
	for _, m := range c.Messages {
		var parts []struct {
			Type     string `json:"type"`
			ImageURL struct {
				URL string `json:"url"`
			} `json:"image_url"`
		}
		if json.Unmarshal(m.Content, &parts) != nil {
			continue
		}
		for _, p := range parts {
			if p.Type == "image_url" {
				out = append(out, p.ImageURL.URL)
			}
		}
	}
	return out
}

// answerTokens is the answer's length: FAKE_TOKENS, where the model
// would end, unless a field the program honours says to go on (ignore_eos
// to max_tokens, min_tokens to at least that); capped by max_tokens.
func (c chatRequest) answerTokens(honours map[string]bool) int {
	n := envInt("FAKE_TOKENS", 4)
	if honours["ignore_eos"] && c.IgnoreEOS && c.MaxTokens > 0 {
		n = c.MaxTokens
	}
	if honours["min_tokens"] && c.MinTokens > n {
		n = c.MinTokens
	}
	if c.MaxTokens > 0 && c.MaxTokens < n {
		n = c.MaxTokens
	}
	return n
}

// streamAnswer writes an OpenAI-style answer of n tokens, streamed as SSE
// or whole.
func streamAnswer(w http.ResponseWriter, req chatRequest, n int, model string, promptTokens int, extraFinal map[string]any) {
	usage := map[string]int{"prompt_tokens": promptTokens, "completion_tokens": n, "total_tokens": promptTokens + n}
	if !req.Stream {
		resp := map[string]any{
			"id": "chatcmpl-fake", "object": "chat.completion", "created": time.Now().Unix(), "model": model,
			"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": strings.Repeat("word ", n)}, "finish_reason": "length"}},
			"usage":   usage,
		}
		writeJSON(w, 200, resp)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	fl, _ := w.(http.Flusher)
	send := func(v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "data: %s\n\n", b)
		if fl != nil {
			fl.Flush()
		}
	}
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": time.Now().Unix(), "model": model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
	}
	send(chunk(map[string]any{"role": "assistant", "content": ""}, nil))
	gap := time.Duration(envInt("FAKE_TOKEN_MS", 0)) * time.Millisecond
	burst := envInt("FAKE_BURST", 0)
	var held []byte
	for i := 0; i < n; i++ {
		time.Sleep(gap)
		if i < burst {
			b, _ := json.Marshal(chunk(map[string]any{"content": "word "}, nil))
			held = append(held, "data: "+string(b)+"\n\n"...)
			if i < burst-1 && i < n-1 {
				continue
			}
			_, _ = w.Write(held)
			if fl != nil {
				fl.Flush()
			}
			continue
		}
		send(chunk(map[string]any{"content": "word "}, nil))
	}
	final := chunk(map[string]any{}, "length")
	for k, v := range extraFinal {
		final[k] = v
	}
	send(final)
	if req.StreamOptions != nil && req.StreamOptions.IncludeUsage {
		send(map[string]any{"id": "chatcmpl-fake", "object": "chat.completion.chunk", "model": model, "choices": []any{}, "usage": usage})
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
	if fl != nil {
		fl.Flush()
	}
}
