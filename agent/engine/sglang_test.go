package engine

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/vlmfleet/vlmfleet/agent/engine/internal/fakeengine/persona"
)

// sglangPersona is SGLang's server as its source shows it
// (python/sglang/srt/server_args.py, srt/entrypoints/http_server.py,
// srt/entrypoints/openai/protocol.py): `python -m sglang.launch_server`
// with argparse options, /health answering 503 until the server is up,
// /get_server_info answering the server's arguments with "version", a
// model list owned by "sglang", and ignore_eos and min_tokens among its
// chat request's sampling fields.
var sglangPersona = persona.Persona{
	Name:  "sglang",
	Entry: []string{"-m", "sglang.launch_server"},
	Flags: map[string]bool{
		"--model-path": true, "--model": true, "--host": true, "--port": true,
		"--served-model-name": true, "--tp-size": true, "--tp": true,
		"--context-length": true, "--mem-fraction-static": true, "--max-running-requests": true,
		"--quantization": true, "--dtype": true, "--kv-cache-dtype": true, "--api-key": true,
		"--chunked-prefill-size": true, "--attention-backend": true,
		"--disable-radix-cache": false, "--trust-remote-code": false, "--enable-metrics": false,
	},
	ModelFlag:         "--model-path",
	ServedFlag:        "--served-model-name",
	APIKeyFlag:        "--api-key",
	Health:            "/health",
	OwnedBy:           "sglang",
	InfoPath:          "/get_server_info",
	VersionArgs:       []string{"-c", "from sglang.version import __version__; print(__version__)"},
	ExecutableVersion: "Python 3.12.3",
	Honours:           []string{"ignore_eos", "min_tokens"},
	OOM:               "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB.",
}

func init() {
	fakeKinds[KindSGLang] = fakeKind{persona: &sglangPersona, oom: "torch.OutOfMemoryError: CUDA out of memory"}
}

// Start runs `python3 -m sglang.launch_server` with the checkpoint, the
// loopback port, a running request per camera and the radix cache off,
// and returns only once /health answers 200, with the version and the
// server's figures recorded.
func TestSGLangStart(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	argvFile := filepath.Join(t.TempDir(), "argv.json")
	cfg := fakeConfig(t, KindSGLang, map[string]string{"FAKE_LOADING_MS": "500", "FAKE_ARGV_FILE": argvFile, "FAKE_VERSION": "0.5.3rc2"})
	e, ep := mustStart(t, cfg, env.Env, Needs{MaxCameras: 3, SearchCameras: 5})
	if code, _, err := newProber("", 2*time.Second).get(context.Background(), strings.TrimSuffix(ep.BaseURL, "/v1")+"/health"); err != nil || code != http.StatusOK {
		t.Fatalf("Start returned while /health answers %d (%v)", code, err)
	}
	b, err := os.ReadFile(argvFile)
	if err != nil {
		t.Fatal(err)
	}
	var argv []string
	if err := json.Unmarshal(b, &argv); err != nil {
		t.Fatal(err)
	}
	port := ep.BaseURL[strings.LastIndexByte(ep.BaseURL, ':')+1 : len(ep.BaseURL)-len("/v1")]
	want := []string{cfg.Command[0], "-m", "sglang.launch_server",
		"--model-path", filepath.Join(env.root, "Qwen3-VL-4B-Instruct"), "--host", "127.0.0.1", "--port", port,
		"--served-model-name", "Qwen3-VL-4B-Instruct", "--max-running-requests", "5", "--disable-radix-cache"}
	if !slices.Equal(argv, want) {
		t.Errorf("argv\n got %q\nwant %q", argv, want)
	}
	info := e.Info()
	if info.Kind != KindSGLang || info.Name != NameSGLang || info.Version != "0.5.3rc2" || ep.Model != "Qwen3-VL-4B-Instruct" {
		t.Errorf("info %s %q version %q, model %q", info.Kind, info.Name, info.Version, ep.Model)
	}
	if info.Props["max_running_requests"] != "5" || info.Props["radix_cache_disabled"] != "true" {
		t.Errorf("props %v, want the running requests and the radix cache as the server reports it", info.Props)
	}
}

// The radix cache is off unless enable_prefix_caching says otherwise, and
// the measurement reads from the command line whether it was.
func TestSGLangCacheSwitch(t *testing.T) {
	t.Parallel()
	for _, on := range []bool{false, true} {
		t.Run(strconv.FormatBool(on), func(t *testing.T) {
			t.Parallel()
			env := newTestEnv(t)
			cfg := fakeConfig(t, KindSGLang, nil)
			cfg.EnablePrefixCaching = on
			e, _ := mustStart(t, cfg, env.Env, Needs{})
			info := e.Info()
			if got := slices.Contains(info.Command, "--disable-radix-cache"); got == on {
				t.Errorf("enable_prefix_caching %t: command %q", on, info.Command)
			}
			if StartedWithoutCache(info) == on {
				t.Errorf("enable_prefix_caching %t: StartedWithoutCache = %t", on, !on)
			}
		})
	}
}

// Without /get_server_info the version comes from SGLang's own module in
// the interpreter that runs it, never from `python3 --version`; a command
// that does not end with the module gets none rather than another
// program's.
func TestSGLangVersionFromCommand(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	e, _ := mustStart(t, fakeConfig(t, KindSGLang, map[string]string{"FAKE_NO_VERSION_API": "1", "FAKE_VERSION": "0.5.2"}), env.Env, Needs{})
	if v := e.Info().Version; v != "0.5.2" {
		t.Errorf("version %q, want SGLang's 0.5.2 (not the interpreter's %q)", v, sglangPersona.ExecutableVersion)
	}
	if argv := (sglangAdapter{}).versionArgv([]string{"/opt/sglang/serve.sh"}); argv != nil {
		t.Errorf("a wrapper script is asked for its version with %q", argv)
	}
}

// The forced-length switches are SGLang's sampling fields, and the server
// answers exactly the tokens asked for.
func TestSGLangForcedLength(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	e, ep := mustStart(t, fakeConfig(t, KindSGLang, map[string]string{"FAKE_TOKENS": "4"}), env.Env, Needs{})
	fields := RequestSwitchesFor(e.Info(), "").ForcedLength(21)
	if fields["ignore_eos"] != true || fields["min_tokens"] != 21 || fields["max_tokens"] != 21 {
		t.Errorf("forced-length fields %v", fields)
	}
	code, body := chatWith(t, ep, pngDataURL(t, 64, 64), 1, fields)
	if got := completionTokens(t, body); code != 200 || got != 21 {
		t.Errorf("HTTP %d, %d tokens, want 21", code, got)
	}
	if RequestSwitchesFor(e.Info(), "").CacheField != "" {
		t.Error("SGLang is sent a cache field it does not take")
	}
}

// An SGLang server attached by URL is named from its /get_server_info.
func TestSGLangRecognised(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	_, ep := mustStart(t, fakeConfig(t, KindSGLang, map[string]string{"FAKE_VERSION": "0.5.3"}), env.Env, Needs{})
	info := attachInfo(t, ep.BaseURL, ep.Model)
	if info.Kind != KindExternal || info.Name != NameSGLang || info.Version != "0.5.3" {
		t.Errorf("attached: %s %q version %q", info.Kind, info.Name, info.Version)
	}
}

// SGLang's settings map to its flags; a GGUF engine's are refused, and
// its flags are set through the settings, not extra_args.
func TestSGLangSettings(t *testing.T) {
	env := newTestEnv(t)
	cfg := Config{Kind: KindSGLang, Model: "Qwen/Qwen3-VL-8B-Instruct", MaxModelLen: 8192, GPUMemoryUtilization: 0.8,
		Quantization: "fp8", Dtype: "bfloat16", TensorParallelSize: 2}
	r, err := cfg.resolve(env.Env)
	if err != nil {
		t.Fatal(err)
	}
	args, _ := sglangAdapter{}.args(r, 8123, Needs{MaxCameras: 2}.normalized(), zerolog.Nop())
	got := strings.Join(append(append([]string(nil), r.command...), args...), " ")
	want := "python3 -m sglang.launch_server --model-path Qwen/Qwen3-VL-8B-Instruct --host 127.0.0.1 --port 8123 --served-model-name Qwen3-VL-8B-Instruct" +
		" --context-length 8192 --mem-fraction-static 0.8 --max-running-requests 2 --quantization fp8 --dtype bfloat16 --tp-size 2 --disable-radix-cache"
	if got != want {
		t.Errorf("argv\n got %s\nwant %s", got, want)
	}
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Kind: KindSGLang, Model: "Qwen3-VL-4B-Instruct", CtxSize: 4096}, "ctx_size: only for kinds llamacpp and ollama; use max_model_len and gpu_memory_utilization with SGLang"},
		{Config{Kind: KindSGLang, Model: "Qwen3-VL-4B-Instruct", ExtraArgs: []string{"--disable-radix-cache"}}, `extra_args[0]: --disable-radix-cache is set by vlmfleet; use the "enable_prefix_caching" setting instead`},
		{Config{Kind: KindSGLang, Model: "Qwen3-VL-4B-Instruct", ExtraArgs: []string{"--max-running-requests=4"}}, "extra_args[0]: --max-running-requests is set by vlmfleet"},
		{Config{Kind: KindSGLang, Model: "Qwen3-VL-4B-Instruct", ExtraArgs: []string{"--tp-size", "2"}}, `extra_args[0]: --tp-size is set by vlmfleet; use the "tensor_parallel_size" setting instead`},
		{Config{Kind: KindSGLang, Model: "Qwen3-VL-4B-Instruct", TensorParallelSize: -1}, "tensor_parallel_size: -1 is negative"},
		{Config{Kind: KindLlamaCpp, Model: "qwen3-vl-4b-q8_0.gguf", MMProj: "mmproj-qwen3-vl-4b-f16.gguf", TensorParallelSize: 2}, "tensor_parallel_size: only for kinds sglang and vllm"},
		{Config{Kind: KindLlamaCpp, Model: "qwen3-vl-4b-q8_0.gguf", MMProj: "mmproj-qwen3-vl-4b-f16.gguf", MaxModelLen: 4096}, "max_model_len: only for kinds sglang and vllm"},
	} {
		err := c.cfg.Validate(env.Env)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.cfg, err, c.want)
		}
	}
}
