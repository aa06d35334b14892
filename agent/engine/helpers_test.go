package engine

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// fakeBinaries is the directory holding the fake `vllm` and `llama-server`,
// built once per test binary on first use.
var fakeBinaries struct {
	once sync.Once
	dir  string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if fakeBinaries.dir != "" {
		os.RemoveAll(fakeBinaries.dir)
	}
	os.Exit(code)
}

// fakeDir builds internal/fakeengine as vllm and hard-links it as llama-server.
func fakeDir(t *testing.T) string {
	t.Helper()
	fakeBinaries.once.Do(func() {
		dir, err := os.MkdirTemp("", "vlmfleet-fakeengine-")
		if err != nil {
			fakeBinaries.err = err
			return
		}
		fakeBinaries.dir = dir
		// go test puts its own toolchain first on PATH, so this is the go
		// that runs the tests.
		goBin, err := exec.LookPath("go")
		if err != nil {
			fakeBinaries.err = fmt.Errorf("build fake engine: %w", err)
			return
		}
		cmd := exec.Command(goBin, "build", "-ldflags=-s -w", "-o", filepath.Join(dir, "vllm"), "./internal/fakeengine")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			fakeBinaries.err = fmt.Errorf("build fake engine: %v\n%s", err, out)
			return
		}
		if err := os.Link(filepath.Join(dir, "vllm"), filepath.Join(dir, "llama-server")); err != nil {
			fakeBinaries.err = err
		}
	})
	if fakeBinaries.err != nil {
		t.Fatal(fakeBinaries.err)
	}
	return fakeBinaries.dir
}

// testEnv is an Env with one model root holding a vLLM checkpoint
// directory and a GGUF model with its projector.
type testEnv struct {
	Env
	root string
}

func newTestEnv(t *testing.T) testEnv {
	t.Helper()
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "Qwen3-VL-4B-Instruct"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"Qwen3-VL-4B-Instruct/config.json", "qwen3-vl-4b-q8_0.gguf", "mmproj-qwen3-vl-4b-f16.gguf"} {
		if err := os.WriteFile(filepath.Join(root, f), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sys := t.TempDir()
	if err := os.MkdirAll(filepath.Join(sys, "proc/sys/vm"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sys, "proc/sys/vm/drop_caches"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return testEnv{
		Env: Env{
			ModelRoots:   []string{root},
			LogDir:       t.TempDir(),
			SysRoot:      sys,
			Log:          zerolog.Nop(),
			stopGrace:    3 * time.Second,
			pollEvery:    20 * time.Millisecond,
			probeTimeout: 300 * time.Millisecond,
		},
		root: root,
	}
}

// fakeConfig is a config of kind (vllm or llamacpp) that runs the fake
// engine on the test env's model, with env for the fake.
func fakeConfig(t *testing.T, kind string, env map[string]string) Config {
	cfg := Config{
		Kind:    kind,
		Command: []string{filepath.Join(fakeDir(t), processKindOf(t, kind).command[0])},
		Model:   "Qwen3-VL-4B-Instruct",
		Env:     env,
	}
	if kind == KindLlamaCpp {
		cfg.Model, cfg.MMProj = "qwen3-vl-4b-q8_0.gguf", "mmproj-qwen3-vl-4b-f16.gguf"
	}
	return cfg
}

// eachProcessKind runs test for vllm and for llama.cpp, in parallel, each
// with its own test env.
func eachProcessKind(t *testing.T, test func(t *testing.T, kind string, env testEnv)) {
	for _, kind := range []string{KindVLLM, KindLlamaCpp} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			test(t, kind, newTestEnv(t))
		})
	}
}

// startEngine starts cfg and stops it when the test ends.
func startEngine(t *testing.T, cfg Config, env Env, needs Needs) (Engine, Endpoint, error) {
	t.Helper()
	e, err := New(cfg, env)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := e.Stop(ctx); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ep, err := e.Start(ctx, needs)
	return e, ep, err
}

// mustStart is startEngine for a start that must succeed.
func mustStart(t *testing.T, cfg Config, env Env, needs Needs) (Engine, Endpoint) {
	t.Helper()
	e, ep, err := startEngine(t, cfg, env, needs)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	return e, ep
}

// pngDataURL is a w×h PNG as a data URL.
func pngDataURL(t *testing.T, w, h int) string {
	t.Helper()
	var buf bytes.Buffer
	if err := png.Encode(&buf, image.NewGray(image.Rect(0, 0, w, h))); err != nil {
		t.Fatal(err)
	}
	return "data:image/png;base64," + base64.StdEncoding.EncodeToString(buf.Bytes())
}

// chat sends one streaming request with images copies of img and returns
// the status and body.
func chat(t *testing.T, ep Endpoint, img string, images int) (int, string) {
	t.Helper()
	content := []any{map[string]any{"type": "text", "text": "Describe the scene."}}
	for i := 0; i < images; i++ {
		content = append(content, map[string]any{"type": "image_url", "image_url": map[string]string{"url": img}})
	}
	body, _ := json.Marshal(map[string]any{
		"model": ep.Model, "stream": true, "max_tokens": 128,
		"stream_options": map[string]bool{"include_usage": true},
		"messages":       []any{map[string]any{"role": "user", "content": content}},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, ep.BaseURL+"/chat/completions", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if ep.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+ep.APIKey)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// waitExited waits for the engine's unrequested exit.
func waitExited(t *testing.T, e Engine) error {
	t.Helper()
	select {
	case err := <-e.Exited():
		return err
	case <-time.After(15 * time.Second):
		t.Fatal("Exited() delivered nothing within 15 s")
		return nil
	}
}

// exitedNow reports whether Exited() has delivered, and what, without
// waiting.
func exitedNow(e Engine) (bool, error) {
	select {
	case err := <-e.Exited():
		return true, err
	default:
		return false, nil
	}
}

// pidGone reports whether a process no longer runs (a zombie waiting for
// a reaper counts as gone).
func pidGone(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || strings.HasPrefix(strings.TrimSpace(s[i+1:]), "Z")
}

func readPid(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("pid file: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// workerGone fails the test when the worker whose pid the fake wrote to
// pidfile (FAKE_CHILD_PIDFILE) still runs.
func workerGone(t *testing.T, pidfile, when string) {
	t.Helper()
	if pid := readPid(t, pidfile); !pidGone(pid) {
		t.Errorf("worker %d still runs %s", pid, when)
	}
}

func mustContain(t *testing.T, what, s string, subs ...string) {
	t.Helper()
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			t.Errorf("%s does not contain %q:\n%s", what, sub, s)
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func processKindOf(t *testing.T, kind string) processKind {
	t.Helper()
	k, ok := kindNamed(kind)
	pk, started := k.(processKind)
	if !ok || !started {
		t.Fatalf("%q is not a kind vlmfleet starts", kind)
	}
	return pk
}
