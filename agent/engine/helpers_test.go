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
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/vlmfleet/vlmfleet/agent/engine/internal/fakeengine/persona"
)

// fakeBinaries is the directory holding the fake engine under the name of
// each kind's executable, built once per test binary on first use.
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

// fakeKind is how the fake engine (internal/fakeengine) plays one kind
// that vlmfleet starts. Each kind's test file says it for its kind
// (fakeKinds), so that the tests run through every kind the fake plays.
type fakeKind struct {
	// persona describes the kind's program to the fake; without one the
	// fake plays it by its executable's name (vllm, llama-server).
	persona *persona.Persona
	// gguf: the config names the test env's GGUF model and projector
	// rather than its checkpoint.
	gguf bool
	// oom is what the program prints when CUDA memory runs out.
	oom string
	// notPlayed says why the fake does not play the kind, and where it
	// is tested instead.
	notPlayed string
}

// fakeKinds are the kinds the fake engine plays, by kind; a kind's test
// file adds its own from its init.
var fakeKinds = map[string]fakeKind{
	KindVLLM:     {oom: "torch.OutOfMemoryError: CUDA out of memory"},
	KindLlamaCpp: {gguf: true, oom: "cudaMalloc failed: out of memory"},
	KindOllama:   {notPlayed: "`ollama serve` imports the model through its own client; e2e/realengine runs the real Ollama"},
}

// fakeDir builds internal/fakeengine and links it under the executable
// name of each kind it plays.
func fakeDir(t *testing.T) string {
	t.Helper()
	fakeBinaries.once.Do(func() {
		fakeBinaries.dir, fakeBinaries.err = buildFake()
	})
	if fakeBinaries.err != nil {
		t.Fatal(fakeBinaries.err)
	}
	return fakeBinaries.dir
}

func buildFake() (string, error) {
	dir, err := os.MkdirTemp("", "vlmfleet-fakeengine-")
	if err != nil {
		return "", err
	}
	// go test puts its own toolchain first on PATH, so this is the go
	// that runs the tests.
	goBin, err := exec.LookPath("go")
	if err != nil {
		return dir, fmt.Errorf("build fake engine: %w", err)
	}
	bin := filepath.Join(dir, "fakeengine")
	cmd := exec.Command(goBin, "build", "-ldflags=-s -w", "-o", bin, "./internal/fakeengine")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return dir, fmt.Errorf("build fake engine: %v\n%s", err, out)
	}
	for kind, fk := range fakeKinds {
		k, ok := registry[kind].(processKind)
		if !ok || fk.notPlayed != "" {
			continue
		}
		link := filepath.Join(dir, k.command[0])
		if _, err := os.Stat(link); err == nil {
			continue
		}
		if err := os.Link(bin, link); err != nil {
			return dir, err
		}
	}
	return dir, nil
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

// fakeConfig is a config of kind that runs the fake engine as the kind's
// default command on the test env's model, with env for the fake.
func fakeConfig(t *testing.T, kind string, env map[string]string) Config {
	t.Helper()
	fk, ok := fakeKinds[kind]
	if !ok || fk.notPlayed != "" {
		t.Fatalf("the fake engine does not play kind %q", kind)
	}
	command := processKindOf(t, kind).command
	cfg := Config{
		Kind:    kind,
		Command: append([]string{filepath.Join(fakeDir(t), command[0])}, command[1:]...),
		Model:   "Qwen3-VL-4B-Instruct",
		Env:     maps.Clone(env),
	}
	if fk.persona != nil {
		if cfg.Env == nil {
			cfg.Env = map[string]string{}
		}
		cfg.Env[persona.Env] = fk.persona.Encode()
	}
	if fk.gguf {
		cfg.Model, cfg.MMProj = "qwen3-vl-4b-q8_0.gguf", "mmproj-qwen3-vl-4b-f16.gguf"
	}
	return cfg
}

// playedKinds are the kinds the fake engine plays, sorted.
func playedKinds() []string {
	var out []string
	for kind, fk := range fakeKinds {
		if fk.notPlayed == "" {
			out = append(out, kind)
		}
	}
	slices.Sort(out)
	return out
}

// eachProcessKind runs test for every kind the fake engine plays, in
// parallel, each with its own test env.
func eachProcessKind(t *testing.T, test func(t *testing.T, kind string, env testEnv)) {
	for _, kind := range playedKinds() {
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
	return chatWith(t, ep, img, images, nil)
}

// chatWith is chat with fields added to (or replacing those of) the body.
func chatWith(t *testing.T, ep Endpoint, img string, images int, fields map[string]any) (int, string) {
	t.Helper()
	content := []any{map[string]any{"type": "text", "text": "Describe the scene."}}
	for i := 0; i < images; i++ {
		content = append(content, map[string]any{"type": "image_url", "image_url": map[string]string{"url": img}})
	}
	msg := map[string]any{
		"model": ep.Model, "stream": true, "max_tokens": 128,
		"stream_options": map[string]bool{"include_usage": true},
		"messages":       []any{map[string]any{"role": "user", "content": content}},
	}
	maps.Copy(msg, fields)
	body, _ := json.Marshal(msg)
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

// completionTokens is the usage an answer streamed by chat reports.
func completionTokens(t *testing.T, body string) int {
	t.Helper()
	for _, line := range strings.Split(body, "\n") {
		var chunk struct {
			Usage *struct {
				CompletionTokens int `json:"completion_tokens"`
			} `json:"usage"`
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if ok && json.Unmarshal([]byte(data), &chunk) == nil && chunk.Usage != nil {
			return chunk.Usage.CompletionTokens
		}
	}
	t.Fatalf("no usage in the answer:\n%s", body)
	return 0
}

func processKindOf(t *testing.T, kind string) processKind {
	t.Helper()
	k, ok := kindNamed(kind)
	pk, started := k.(processKind)
	if !ok || !started {
		t.Fatalf("%q is not a kind vlmfleet starts", kind)
	}
	return pk
}
