package engine

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/internal/testutil"
)

// A vLLM that accepts connections before its engine is built (requests
// hang), then serves: Start waits with short probes, records version and
// argv, and the image limit it passed is the one vLLM enforces.
func TestVLLMReadyAndImageLimit(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	argvFile := filepath.Join(t.TempDir(), "argv.json")
	cfg := fakeConfig(t, KindVLLM, map[string]string{"FAKE_LOADING_MS": "700", "FAKE_ARGV_FILE": argvFile, "FAKE_VERSION": "0.11.1"})
	cfg.DropPageCache = true
	cfg.GPUMemoryUtilization = 0.8
	e, ep := mustStart(t, cfg, env.Env, Needs{MaxCameras: 4, MaxImages: 3, MaxTokens: 128, MaxWidth: 1280, MaxHeight: 720})
	if !strings.HasPrefix(ep.BaseURL, "http://127.0.0.1:") || !strings.HasSuffix(ep.BaseURL, "/v1") || ep.Model != "Qwen3-VL-4B-Instruct" {
		t.Errorf("endpoint = %+v", ep)
	}
	info := e.Info()
	if info.Kind != "vllm" || info.Name != "vLLM" || info.Version != "0.11.1" || info.Endpoint != ep.BaseURL {
		t.Errorf("info = %+v", info)
	}
	for k, want := range map[string]string{"max_num_seqs": "4", "limit_mm_per_prompt": `{"image":3}`, "prefix_caching": "false", "max_model_len": "32768", "dropped_page_cache": "true"} {
		if info.Props[k] != want {
			t.Errorf("Props[%s] = %q, want %q", k, info.Props[k], want)
		}
	}
	if b, err := os.ReadFile(filepath.Join(env.SysRoot, "proc/sys/vm/drop_caches")); err != nil || string(b) != "3" {
		t.Errorf("drop_caches = %q, %v; want \"3\"", b, err)
	}
	// The fake received exactly the recorded argv, the JSON as one element.
	var argv []string
	b, err := os.ReadFile(argvFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &argv); err != nil {
		t.Fatal(err)
	}
	if strings.Join(argv, "\x00") != strings.Join(info.Command, "\x00") {
		t.Errorf("engine got argv %q, Info().Command = %q", argv, info.Command)
	}
	mustContain(t, "argv", strings.Join(argv, " "), ` --limit-mm-per-prompt {"image":3} `, " --max-num-seqs 4 ", " --no-enable-prefix-caching", " --gpu-memory-utilization 0.8")

	img := pngDataURL(t, 32, 32)
	if code, body := chat(t, ep, img, 3); code != 200 || !strings.Contains(body, "data: [DONE]") {
		t.Errorf("3 images: HTTP %d %s", code, body)
	}
	code, body := chat(t, ep, img, 4)
	if code != http.StatusBadRequest {
		t.Errorf("4 images: HTTP %d, want 400", code)
	}
	mustContain(t, "refusal", body, "At most 3 image(s) may be provided in one request.")
	mustContain(t, "log tail", e.LogTail(40), "At most 3 image(s)", "400 Bad Request")
	mustContain(t, "Info().LogTail", e.Info().LogTail, "vlmfleet: starting ")
}

// The default limit is what vLLM refuses a second image with, which is
// why vlmfleet always passes --limit-mm-per-prompt.
func TestVLLMRefusesExtraImage(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	e, ep := mustStart(t, fakeConfig(t, KindVLLM, nil), env.Env, Needs{MaxCameras: 1, MaxImages: 1})
	code, body := chat(t, ep, pngDataURL(t, 8, 8), 2)
	if code != 400 {
		t.Fatalf("2 images with limit 1: HTTP %d %s", code, body)
	}
	mustContain(t, "refusal", body, "At most 1 image(s) may be provided in one request.")
	mustContain(t, "log tail", e.LogTail(10), "At most 1 image(s) may be provided in one request.")
	if exited, err := exitedNow(e); exited {
		t.Fatalf("a refused request must not end the engine: %v", err)
	}
}

// A slow start (nothing listens for a while) is waited out, and with no
// /version endpoint the version comes from `vllm --version`.
func TestVLLMSlowStartVersionFallback(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	cfg := fakeConfig(t, KindVLLM, map[string]string{"FAKE_STARTUP_MS": "600", "FAKE_NO_VERSION_API": "1", "FAKE_VERSION": "0.10.2"})
	e, _ := mustStart(t, cfg, env.Env, Needs{})
	if v := e.Info().Version; v != "0.10.2" {
		t.Errorf("version = %q, want 0.10.2 from --version", v)
	}
}

// A start that dies of CUDA OOM ends Start with an *Error that says so and
// carries the log tail.
func TestFailedStartOutOfMemory(t *testing.T) {
	t.Parallel()
	eachProcessKind(t, func(t *testing.T, kind string, env testEnv) {
		_, _, err := startEngine(t, fakeConfig(t, kind, map[string]string{"FAKE_FAIL": "oom"}), env.Env, Needs{MaxCameras: 2})
		var ee *Error
		if !errors.As(err, &ee) {
			t.Fatalf("Start error = %v, want *Error", err)
		}
		if ee.Phase != PhaseStartup || !ee.OOM || !errors.Is(err, ErrOutOfMemory) {
			t.Errorf("error = %+v", ee)
		}
		mustContain(t, "error", err.Error(), "engine exited during startup: exit status 1", "out of memory", "log tail:")
		mustContain(t, "tail", ee.LogTail, fakeKinds[kind].oom)
	})
}

// A start that fails for another reason is not called out of memory.
func TestFailedStartCrash(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	_, _, err := startEngine(t, fakeConfig(t, KindVLLM, map[string]string{"FAKE_FAIL": "crash"}), env.Env, Needs{})
	var ee *Error
	if !errors.As(err, &ee) || ee.OOM || errors.Is(err, ErrOutOfMemory) {
		t.Fatalf("error = %v", err)
	}
	mustContain(t, "error", err.Error(), "exited during startup", "RuntimeError: Engine core initialization failed")
}

// An engine that never becomes ready is stopped, workers included, when
// the startup timeout passes.
func TestStartupTimeout(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	pidfile := filepath.Join(t.TempDir(), "child.pid")
	cfg := fakeConfig(t, KindLlamaCpp, map[string]string{"FAKE_LOADING_MS": "60000", "FAKE_CHILD_PIDFILE": pidfile})
	// Long enough for the fake to write its worker's pid on a loaded machine.
	cfg.StartupTimeout = Duration(1500 * time.Millisecond)
	_, _, err := startEngine(t, cfg, env.Env, Needs{})
	var ee *Error
	if !errors.As(err, &ee) || ee.Phase != PhaseStartup {
		t.Fatalf("error = %v", err)
	}
	mustContain(t, "error", err.Error(), "not ready after 1.5s", "Loading model", "log tail:")
	workerGone(t, pidfile, "after the startup timeout")
}

// Cancelling Start stops the engine.
func TestStartCancelled(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	pidfile := filepath.Join(t.TempDir(), "child.pid")
	e, err := New(fakeConfig(t, KindVLLM, map[string]string{"FAKE_LOADING_MS": "60000", "FAKE_CHILD_PIDFILE": pidfile}), env.Env)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	if _, err := e.Start(ctx, Needs{}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Start error = %v, want deadline exceeded", err)
	}
	workerGone(t, pidfile, "after a cancelled Start")
}

// llama-server answers 503 "Loading model" first; once ready, /props gives
// n_ctx, slots and build, and the context fits the planned images.
func TestLlamaLoadingPropsAndContext(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	argvFile := filepath.Join(t.TempDir(), "argv.json")
	cfg := fakeConfig(t, KindLlamaCpp, map[string]string{"FAKE_LOADING_MS": "400", "FAKE_ARGV_FILE": argvFile})
	cfg.ServedName = "qwen3-vl-4b"
	needs := Needs{MaxCameras: 2, MaxImages: 2, MaxTokens: 128, MaxWidth: 1280, MaxHeight: 720}
	e, ep := mustStart(t, cfg, env.Env, needs)
	info := e.Info()
	per := slotTokens(needs)
	for k, want := range map[string]string{
		"n_ctx": itoa(per), "total_slots": "2", "build": "b6123-abc1234", "vision": "true",
		"parallel": "2", "ctx_size": itoa(2 * per), "n_gpu_layers": "999", "served_name": "qwen3-vl-4b",
	} {
		if info.Props[k] != want {
			t.Errorf("Props[%s] = %q, want %q", k, info.Props[k], want)
		}
	}
	if info.Name != "llama.cpp" || info.Version != "b6123-abc1234" || ep.Model != "qwen3-vl-4b" {
		t.Errorf("info = %+v, endpoint = %+v", info, ep)
	}
	mustContain(t, "log", e.LogTail(100), "model loaded, ready")

	if code := testutil.Status(t, http.MethodGet, strings.TrimSuffix(ep.BaseURL, "/v1")+"/metrics", ""); code != 200 {
		t.Errorf("/metrics: HTTP %d; --metrics was not passed?", code)
	}
	img := pngDataURL(t, 1280, 720)
	if code, body := chat(t, ep, img, 2); code != 200 {
		t.Errorf("2 images at 720p within the planned context: HTTP %d %s", code, body)
	}
	// Far beyond the plan, the slot's share of the context runs out.
	code, body := chat(t, ep, img, 6)
	if code != 400 {
		t.Errorf("6 images: HTTP %d, want 400", code)
	}
	mustContain(t, "refusal", body, "exceeds the available context size")
}

// A crash after some requests reaches Exited() with the reason and tail.
func TestCrashMidLevel(t *testing.T) {
	t.Parallel()
	eachProcessKind(t, func(t *testing.T, kind string, env testEnv) {
		e, ep := mustStart(t, fakeConfig(t, kind, map[string]string{"FAKE_CRASH_AFTER": "2"}), env.Env, Needs{MaxCameras: 2})
		img := pngDataURL(t, 64, 64)
		if code, body := chat(t, ep, img, 1); code != 200 {
			t.Fatalf("first request: HTTP %d %s", code, body)
		}
		chat(t, ep, img, 1) // the engine dies answering this one
		err := waitExited(t, e)
		var ee *Error
		if !errors.As(err, &ee) || ee.Phase != PhaseRunning || !errors.Is(err, ErrOutOfMemory) {
			t.Fatalf("Exited() = %v", err)
		}
		mustContain(t, "error", err.Error(), "exited while running: exit status 1", "out of memory", "log tail:")
	})
}

// Stop ends the whole process group: SIGTERM first, SIGKILL after the grace
// for what ignores it, workers included.
func TestStopKillsGroup(t *testing.T) {
	t.Parallel()
	cases := map[string]map[string]string{
		"leader exits on SIGTERM, worker ignores it": {"FAKE_CHILD_IGNORE_TERM": "1"},
		"both ignore SIGTERM":                        {"FAKE_CHILD_IGNORE_TERM": "1", "FAKE_IGNORE_TERM": "1"},
		"both honour SIGTERM":                        {},
	}
	for name, fenv := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			env := newTestEnv(t)
			env.stopGrace = 300 * time.Millisecond
			pidfile := filepath.Join(t.TempDir(), "child.pid")
			fenv["FAKE_CHILD_PIDFILE"] = pidfile
			e, _ := mustStart(t, fakeConfig(t, KindVLLM, fenv), env.Env, Needs{})
			leader := e.(*procEngine).run.cmd.Process.Pid
			worker := readPid(t, pidfile)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := e.Stop(ctx); err != nil {
				t.Fatalf("Stop: %v", err)
			}
			if !pidGone(leader) || !pidGone(worker) {
				t.Errorf("after Stop: leader gone %v, worker gone %v", pidGone(leader), pidGone(worker))
			}
			if err := e.Stop(ctx); err != nil {
				t.Errorf("second Stop: %v", err)
			}
			if exited, err := exitedNow(e); exited {
				t.Errorf("Exited() after a requested Stop: %v", err)
			}
		})
	}
}

// When another process takes the port first, the start is retried once
// on a new port.
func TestBindFailureRetried(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	once := filepath.Join(t.TempDir(), "bind-once")
	e, _ := mustStart(t, fakeConfig(t, KindVLLM, map[string]string{"FAKE_BIND_ONCE_FILE": once}), env.Env, Needs{})
	log := e.LogTail(100)
	if n := strings.Count(log, "vlmfleet: starting "); n != 2 {
		t.Errorf("%d starts in the log, want 2:\n%s", n, log)
	}
	mustContain(t, "log", log, "address already in use")
}

// A first attempt that reported the taken port but stayed alive until the
// startup timeout is stopped before the retry, so that it cannot hold GPU
// memory next to the second.
func TestBindFailureRetryStopsTheFirstProcess(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	once := filepath.Join(t.TempDir(), "bind-once")
	cfg := fakeConfig(t, KindVLLM, map[string]string{"FAKE_BIND_ONCE_FILE": once, "FAKE_BIND_ONCE_HANG": "1"})
	cfg.StartupTimeout = Duration(2 * time.Second)
	e, _ := mustStart(t, cfg, env.Env, Needs{})
	first := readPid(t, once)
	if !pidGone(first) {
		t.Errorf("the first attempt (pid %d) still runs after the retry started", first)
	}
	pe := e.(*procEngine)
	pe.mu.Lock()
	run := pe.run
	pe.mu.Unlock()
	if run == nil || run.cmd.Process.Pid == first {
		t.Fatalf("the engine runs the first attempt's process")
	}
	if n := strings.Count(e.LogTail(100), "vlmfleet: starting "); n != 2 {
		t.Errorf("%d starts in the log, want 2", n)
	}
}

// With drop_page_cache set and no writable drop_caches, Start fails before
// running anything and says what to do.
func TestDropPageCacheFailure(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	env.SysRoot = t.TempDir() // no proc/sys/vm/drop_caches here
	cfg := fakeConfig(t, KindVLLM, nil)
	cfg.DropPageCache = true
	e, _, err := startEngine(t, cfg, env.Env, Needs{})
	if err == nil {
		t.Fatal("Start succeeded without drop_caches")
	}
	mustContain(t, "error", err.Error(), "drop_page_cache", "drop_caches")
	if e.(*procEngine).run != nil {
		t.Error("the engine was started although dropping the page cache failed")
	}
}

// The API key reaches the engine and the probes but never the record.
func TestAPIKeyRedacted(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	cfg := fakeConfig(t, KindVLLM, nil)
	cfg.APIKey = "s3cret"
	e, ep := mustStart(t, cfg, env.Env, Needs{})
	if ep.APIKey != "s3cret" {
		t.Errorf("endpoint key = %q", ep.APIKey)
	}
	info := e.Info()
	if strings.Contains(strings.Join(info.Command, " "), "s3cret") || strings.Contains(info.LogTail, "s3cret") {
		t.Errorf("the key leaks into the record: %q / %q", info.Command, info.LogTail)
	}
	if code, body := chat(t, ep, pngDataURL(t, 8, 8), 1); code != 200 {
		t.Errorf("chat with key: HTTP %d %s", code, body)
	}
}

func TestStartTwice(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	e, _ := mustStart(t, fakeConfig(t, KindVLLM, nil), env.Env, Needs{})
	if _, err := e.Start(context.Background(), Needs{}); err == nil {
		t.Error("second Start succeeded")
	}
}

// A SIGKILL nobody here sent (the kernel's OOM killer on a Jetson) is
// reported as running out of memory.
func TestKilledFromOutside(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	e, _ := mustStart(t, fakeConfig(t, KindLlamaCpp, nil), env.Env, Needs{})
	if err := syscall.Kill(e.(*procEngine).run.cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err := waitExited(t, e)
	if !errors.Is(err, ErrOutOfMemory) {
		t.Errorf("Exited() = %v, want out of memory", err)
	}
	mustContain(t, "error", err.Error(), "exited while running: signal: killed", "out-of-memory killer")
}

// Without a command the kind's default executable is looked up in the
// PATH that Env.Getenv reports.
func TestDefaultCommandFromPath(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	dir := fakeDir(t)
	env.Getenv = func(k string) string {
		if k == "PATH" {
			return "relative/dir:" + dir
		}
		return ""
	}
	e, _ := mustStart(t, Config{Kind: KindLlamaCpp, Model: "qwen3-vl-4b-q8_0.gguf", MMProj: "mmproj-qwen3-vl-4b-f16.gguf"}, env.Env, Needs{})
	if cmd := e.Info().Command; cmd[0] != "llama-server" {
		t.Errorf("command = %q", cmd)
	}
	env.Getenv = func(string) string { return "/nonexistent" }
	_, _, err := startEngine(t, Config{Kind: KindVLLM, Model: "Qwen3-VL-4B-Instruct"}, env.Env, Needs{})
	if err == nil {
		t.Fatal("Start found vllm in an empty PATH")
	}
	mustContain(t, "error", err.Error(), `executable "vllm" not found in PATH`)
}

// Info and LogTail may be read while Start runs (the agent shows progress).
func TestInfoDuringStart(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	e, err := New(fakeConfig(t, KindLlamaCpp, map[string]string{"FAKE_LOADING_MS": "300"}), env.Env)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Stop(context.Background())
	done := make(chan struct{})
	reads := make(chan int)
	go func() {
		n := 0
		for {
			select {
			case <-done:
				reads <- n
				return
			default:
				_ = e.Info()
				_ = e.LogTail(5)
				n++
			}
		}
	}()
	_, err = e.Start(context.Background(), Needs{})
	close(done)
	if n := <-reads; n == 0 {
		t.Error("no concurrent reads happened")
	}
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	if e.Info().Props["total_slots"] != "1" {
		t.Errorf("props = %v", e.Info().Props)
	}
}

// The fake engine plays every kind vlmfleet starts, or the kind says why
// not and where it is tested instead.
func TestEveryStartedKindIsPlayed(t *testing.T) {
	for _, k := range processKinds() {
		if _, ok := fakeKinds[k.name()]; !ok {
			t.Errorf("kind %s: not in fakeKinds; its test file should say how the fake engine plays it (a persona) or why it cannot", k.name())
		}
	}
}

// A kind's forced-length switches make the engine answer exactly the
// tokens asked for, where it would have ended sooner by itself.
func TestForcedLength(t *testing.T) {
	t.Parallel()
	eachProcessKind(t, func(t *testing.T, kind string, env testEnv) {
		e, ep := mustStart(t, fakeConfig(t, kind, map[string]string{"FAKE_TOKENS": "4"}), env.Env, Needs{})
		img := pngDataURL(t, 64, 64)
		code, body := chat(t, ep, img, 1)
		if code != 200 || completionTokens(t, body) != 4 {
			t.Fatalf("unforced answer: HTTP %d, want 4 tokens where the model ends:\n%s", code, body)
		}
		forced := RequestSwitchesFor(e.Info(), "").ForcedLength
		if forced == nil {
			t.Fatalf("kind %s has no forced-length switches", kind)
		}
		code, body = chatWith(t, ep, img, 1, forced(37))
		if got := completionTokens(t, body); code != 200 || got != 37 {
			t.Errorf("forced to 37 tokens with %v: HTTP %d, %d tokens", forced(37), code, got)
		}
	})
}
