package engine

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/rs/zerolog"
	"github.com/vlmfleet/vlmfleet/agent/simengine"
	"github.com/vlmfleet/vlmfleet/protocol"
)

func intp(n int) *int { return &n }

// The argv each adapter builds, element by element.
func TestArgs(t *testing.T) {
	env := newTestEnv(t)
	root := env.root
	needs := Needs{MaxCameras: 8, MaxImages: 5, MaxTokens: 128, MaxWidth: 2560, MaxHeight: 1440}
	per := slotTokens(needs)
	cases := []struct {
		name string
		cfg  Config
		want []string
	}{
		{
			name: "vllm defaults",
			cfg:  Config{Kind: KindVLLM, Model: "Qwen3-VL-4B-Instruct"},
			want: []string{"vllm", "serve", root + "/Qwen3-VL-4B-Instruct", "--host", "127.0.0.1", "--port", "8123",
				"--served-model-name", "Qwen3-VL-4B-Instruct", "--max-num-seqs", "8", "--limit-mm-per-prompt", `{"image":5}`,
				"--no-enable-prefix-caching"},
		},
		{
			name: "vllm every setting, container wrapper ending in serve",
			cfg: Config{Kind: KindVLLM, Command: []string{"docker", "run", "--rm", "--runtime", "nvidia", "--network", "host", "dustynv/vllm:r36.4.0", "vllm", "serve"},
				Model: filepath.Join(root, "Qwen3-VL-4B-Instruct"), ServedName: "qwen", MaxModelLen: 32768, GPUMemoryUtilization: 0.75,
				Quantization: "fp8", Dtype: "bfloat16", EnablePrefixCaching: true, APIKey: "k", ExtraArgs: []string{"--enforce-eager", "--trust-remote-code"}},
			want: []string{"docker", "run", "--rm", "--runtime", "nvidia", "--network", "host", "dustynv/vllm:r36.4.0", "vllm", "serve",
				root + "/Qwen3-VL-4B-Instruct", "--host", "127.0.0.1", "--port", "8123", "--served-model-name", "qwen",
				"--max-model-len", "32768", "--gpu-memory-utilization", "0.75", "--max-num-seqs", "8", "--limit-mm-per-prompt", `{"image":5}`,
				"--quantization", "fp8", "--dtype", "bfloat16", "--enable-prefix-caching", "--api-key", "k", "--enforce-eager", "--trust-remote-code"},
		},
		{
			name: "vllm tensor parallel",
			cfg:  Config{Kind: KindVLLM, Model: "Qwen3-VL-4B-Instruct", TensorParallelSize: 8},
			want: []string{"vllm", "serve", root + "/Qwen3-VL-4B-Instruct", "--host", "127.0.0.1", "--port", "8123",
				"--served-model-name", "Qwen3-VL-4B-Instruct", "--max-num-seqs", "8", "--limit-mm-per-prompt", `{"image":5}`,
				"--tensor-parallel-size", "8", "--no-enable-prefix-caching"},
		},
		{
			name: "vllm hub id",
			cfg:  Config{Kind: KindVLLM, Model: "Qwen/Qwen3-VL-8B-Instruct"},
			want: []string{"vllm", "serve", "Qwen/Qwen3-VL-8B-Instruct", "--host", "127.0.0.1", "--port", "8123",
				"--served-model-name", "Qwen3-VL-8B-Instruct", "--max-num-seqs", "8", "--limit-mm-per-prompt", `{"image":5}`,
				"--no-enable-prefix-caching"},
		},
		{
			name: "llamacpp defaults",
			cfg:  Config{Kind: KindLlamaCpp, Model: "qwen3-vl-4b-q8_0.gguf", MMProj: "mmproj-qwen3-vl-4b-f16.gguf"},
			want: []string{"llama-server", "-m", root + "/qwen3-vl-4b-q8_0.gguf", "--mmproj", root + "/mmproj-qwen3-vl-4b-f16.gguf",
				"--host", "127.0.0.1", "--port", "8123", "-ngl", "999", "-c", itoa(8 * per), "-np", "8", "--metrics", "--no-webui"},
		},
		{
			name: "llamacpp every setting",
			cfg: Config{Kind: KindLlamaCpp, Command: []string{"/opt/llama.cpp/build/bin/llama-server"}, Model: root + "/qwen3-vl-4b-q8_0.gguf",
				MMProj: root + "/mmproj-qwen3-vl-4b-f16.gguf", ServedName: "qwen", GPULayers: intp(20), CtxSize: 65536,
				ExtraArgs: []string{"-fa", "on", "--jinja"}},
			want: []string{"/opt/llama.cpp/build/bin/llama-server", "-m", root + "/qwen3-vl-4b-q8_0.gguf", "--mmproj", root + "/mmproj-qwen3-vl-4b-f16.gguf",
				"--host", "127.0.0.1", "--port", "8123", "-ngl", "20", "-c", "65536", "-np", "8", "--metrics", "--no-webui",
				"--alias", "qwen", "-fa", "on", "--jinja"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := c.cfg.resolve(env.Env)
			if err != nil {
				t.Fatal(err)
			}
			var ad adapter = vllmAdapter{}
			if c.cfg.Kind == KindLlamaCpp {
				ad = llamaAdapter{}
			}
			args, _ := ad.args(r, 8123, needs.normalized(), zerolog.Nop())
			got := append(append([]string(nil), r.command...), args...)
			if strings.Join(got, "\x00") != strings.Join(c.want, "\x00") {
				t.Errorf("argv\n got %q\nwant %q", got, c.want)
			}
		})
	}
}

// A search may measure up to its ceiling: vLLM gets a sequence for each of
// its cameras, llama.cpp keeps one slot per camera of the ladder (its
// cache is sized by slot).
func TestSearchSizesVLLMSequences(t *testing.T) {
	env := newTestEnv(t)
	w := protocol.DefaultWorkload()
	w.Search = 64
	needs := NeedsOf(w).normalized()
	if needs.MaxCameras != 16 || needs.SearchCameras != 64 {
		t.Fatalf("needs %+v, want 16 cameras on the ladder and 64 searched", needs)
	}
	for _, c := range []struct {
		cfg  Config
		ad   adapter
		want string
	}{
		{Config{Kind: KindVLLM, Model: "Qwen/Qwen3-VL-4B-Instruct"}, vllmAdapter{}, " --max-num-seqs 64 "},
		{Config{Kind: KindLlamaCpp, Model: "qwen3-vl-4b-q8_0.gguf", MMProj: "mmproj-qwen3-vl-4b-f16.gguf"}, llamaAdapter{}, " -np 16 "},
	} {
		r, err := c.cfg.resolve(env.Env)
		if err != nil {
			t.Fatal(err)
		}
		args, _ := c.ad.args(r, 8123, needs, zerolog.Nop())
		if got := " " + strings.Join(args, " ") + " "; !strings.Contains(got, c.want) {
			t.Errorf("%s: argv %q lacks %q", c.cfg.Kind, got, c.want)
		}
	}
}

// Ollama takes its settings from the environment: its own port, store and
// home, one sequence per camera, each with the context of the largest
// request; the Modelfile names the model and then its projector.
func TestOllamaArgsAndEnv(t *testing.T) {
	env := newTestEnv(t)
	root := env.root
	needs := Needs{MaxCameras: 3, MaxImages: 2, MaxTokens: 64, MaxWidth: 1280, MaxHeight: 720}
	cfg := Config{Kind: KindOllama, Model: "qwen3-vl-4b-q8_0.gguf", MMProj: "mmproj-qwen3-vl-4b-f16.gguf",
		Env: map[string]string{"OLLAMA_FLASH_ATTENTION": "1"}}
	r, err := cfg.resolve(env.Env)
	if err != nil {
		t.Fatal(err)
	}
	if r.served != "qwen3-vl-4b-q8_0" || strings.Join(r.command, " ") != "ollama" {
		t.Errorf("served %q, command %q", r.served, r.command)
	}
	args, props := ollamaAdapter{}.args(r, 8123, needs.normalized(), zerolog.Nop())
	if strings.Join(args, " ") != "serve" {
		t.Errorf("args %q, want [serve]", args)
	}
	per := slotTokens(needs.normalized())
	if props["num_parallel"] != "3" || props["context_length"] != itoa(per) || props["env.OLLAMA_FLASH_ATTENTION"] != "1" {
		t.Errorf("props %v", props)
	}
	logDir := t.TempDir()
	pe, err := ollamaAdapter{}.processEnv(r, 8123, needs.normalized(), logDir)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"OLLAMA_HOST": "127.0.0.1:8123", "OLLAMA_MODELS": filepath.Join(logDir, "ollama", "models"),
		"HOME": filepath.Join(logDir, "ollama", "home"), "OLLAMA_NUM_PARALLEL": "3",
		"OLLAMA_CONTEXT_LENGTH": itoa(per), "OLLAMA_KEEP_ALIVE": "-1",
	}
	for k, v := range want {
		if pe[k] != v {
			t.Errorf("%s=%q, want %q", k, pe[k], v)
		}
	}
	for _, d := range []string{pe["OLLAMA_MODELS"], pe["HOME"]} {
		if fi, err := os.Stat(d); err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: %v %v; want a private directory", d, fi, err)
		}
	}
	r.CtxSize = 4096
	if pe, _ := (ollamaAdapter{}).processEnv(r, 8123, needs.normalized(), logDir); pe["OLLAMA_CONTEXT_LENGTH"] != "4096" {
		t.Errorf("ctx_size 4096 gave OLLAMA_CONTEXT_LENGTH=%s", pe["OLLAMA_CONTEXT_LENGTH"])
	}
	mf := ollamaModelfile(r)
	if mf != "FROM \""+root+"/qwen3-vl-4b-q8_0.gguf\"\nFROM \""+root+"/mmproj-qwen3-vl-4b-f16.gguf\"\n" {
		t.Errorf("Modelfile:\n%s", mf)
	}
	if got := ollamaClient([]string{"/opt/ollama", "serve"}); strings.Join(got, " ") != "/opt/ollama" {
		t.Errorf("client of [/opt/ollama serve] = %q", got)
	}
	if ollamaDefaultName("Qwen3-VL 4B+Q8_0") != "qwen3-vl-4b-q8_0" {
		t.Errorf("default name %q", ollamaDefaultName("Qwen3-VL 4B+Q8_0"))
	}
	for out, want := range map[string]string{
		"ollama version is 0.17.4\n": "0.17.4",
		"Warning: could not connect to a running Ollama instance\nWarning: client version is 0.17.4\n": "0.17.4",
	} {
		if got := (ollamaAdapter{}).parseVersion(out); got != want {
			t.Errorf("parseVersion(%q) = %q, want %q", out, got, want)
		}
	}
	if !ollamaSame("tiny:latest", "tiny") || ollamaSame("tiny:q8", "tiny") {
		t.Error("ollamaSame does not treat no tag as :latest")
	}
}

// Per-slot context: 5 images at 2K as 28-pixel tokens, plus prompt,
// answer and margin, rounded up to 256.
func TestSlotTokens(t *testing.T) {
	if got := imageTokens(2560, 1440); got != 92*52+2 {
		t.Errorf("imageTokens(2K) = %d", got)
	}
	if got := imageTokens(20000, 20000); got != maxImageTokens {
		t.Errorf("imageTokens is not capped: %d", got)
	}
	n := Needs{MaxCameras: 1, MaxImages: 5, MaxTokens: 128, MaxWidth: 2560, MaxHeight: 1440}
	want := 5*(92*52+2) + 256 + 128 + 256
	if got := requestTokens(n); got != want {
		t.Errorf("requestTokens = %d, want %d", got, want)
	}
	if got := slotTokens(n); got%256 != 0 || got < want || got >= want+256 {
		t.Errorf("slotTokens = %d for %d", got, want)
	}
	def := NeedsOf(protocol.DefaultWorkload())
	if def.MaxCameras != 16 || def.MaxImages != 5 || def.MaxTokens != 128 || def.MaxWidth != 2560 || def.MaxHeight != 1440 {
		t.Errorf("NeedsOf(default workload) = %+v", def)
	}
	// The default plan's largest request is its own: five 2K images.
	if got := requestTokens(def.normalized()); got != want {
		t.Errorf("requestTokens(default workload) = %d, want %d", got, want)
	}
	if z := (Needs{}).normalized(); z.MaxCameras != 1 || z.MaxImages != 1 || z.MaxTokens != 128 || z.MaxWidth != 2560 {
		t.Errorf("zero needs normalized = %+v", z)
	}
}

// The largest request is the largest of each family of the plan: five
// images come only at the multi-image sizes, and the camera levels send
// one image each. Five 2K images are in neither family here, so no slot
// is sized for them.
func TestContextEstimatePerFamily(t *testing.T) {
	w := protocol.DefaultWorkload()
	w.Sizes, w.Cameras = []string{"2K"}, []int{1, 4}
	w.MultiImageSizes, w.ImagesPerRequest = []string{"480p"}, []int{1, 3, 5}
	needs := NeedsOf(w).normalized()
	oneLarge := imageTokens(2560, 1440)
	fiveSmall := 5 * imageTokens(854, 480)
	want := max(oneLarge, fiveSmall) + promptTokens + w.MaxTokens + contextMargin
	if got := requestTokens(needs); got != want {
		t.Errorf("requestTokens = %d, want %d (one 2K image; five 480p images are %d tokens); five 2K images would be %d",
			got, want, fiveSmall, 5*oneLarge+promptTokens+w.MaxTokens+contextMargin)
	}
	r, err := Config{Kind: KindLlamaCpp, Model: "qwen3-vl-4b-q8_0.gguf", MMProj: "mmproj-qwen3-vl-4b-f16.gguf"}.resolve(newTestEnv(t).Env)
	if err != nil {
		t.Fatal(err)
	}
	_, props := llamaAdapter{}.args(r, 8123, needs, zerolog.Nop())
	if per := ceilDiv(want, 256) * 256; props["slot_tokens_est"] != itoa(per) || props["ctx_size"] != itoa(4*per) {
		t.Errorf("slot %s ctx %s, want %d and 4 slots × %d", props["slot_tokens_est"], props["ctx_size"], per, per)
	}
	// The other way round: the single-image levels at 2K and five images
	// at 1080p; the five 1080p images are the largest.
	w.MultiImageSizes = []string{"1080p"}
	want = max(oneLarge, 5*imageTokens(1920, 1080)) + promptTokens + w.MaxTokens + contextMargin
	if got := requestTokens(NeedsOf(w).normalized()); got != want {
		t.Errorf("requestTokens = %d, want %d", got, want)
	}
}

// Bad configs are refused with the field named and what is allowed.
func TestValidate(t *testing.T) {
	env := newTestEnv(t)
	root := env.root
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "evil.gguf"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "evil.gguf"), filepath.Join(root, "escape.gguf")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "escape-dir")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "missing.gguf"), filepath.Join(root, "dangling.gguf")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "qwen3-vl-4b-q8_0.gguf"), filepath.Join(root, "link-inside.gguf")); err != nil {
		t.Fatal(err)
	}
	mm := "mmproj-qwen3-vl-4b-f16.gguf"
	cases := []struct {
		name string
		cfg  Config
		want string // "" means valid
	}{
		{"no kind", Config{}, "kind: missing; want one of " + strings.Join(Kinds(), ", ")},
		{"bad kind", Config{Kind: "tgi"}, `kind: "tgi"; want one of`},
		{"ollama ok", Config{Kind: KindOllama, Model: "qwen3-vl-4b-q8_0.gguf", MMProj: mm, Env: map[string]string{"OLLAMA_FLASH_ATTENTION": "1"}}, ""},
		{"ollama no mmproj", Config{Kind: KindOllama, Model: "qwen3-vl-4b-q8_0.gguf"}, "mmproj: missing; Ollama needs the vision projector"},
		{"ollama not gguf", Config{Kind: KindOllama, Model: "Qwen3-VL-4B-Instruct", MMProj: mm}, "not a .gguf file"},
		{"ollama model escapes", Config{Kind: KindOllama, Model: "escape.gguf", MMProj: mm}, "resolves to"},
		{"ollama managed env", Config{Kind: KindOllama, Model: "qwen3-vl-4b-q8_0.gguf", MMProj: mm, Env: map[string]string{"OLLAMA_NUM_PARALLEL": "4"}}, "env: OLLAMA_NUM_PARALLEL is set by vlmfleet"},
		{"ollama context env", Config{Kind: KindOllama, Model: "qwen3-vl-4b-q8_0.gguf", MMProj: mm, Env: map[string]string{"OLLAMA_CONTEXT_LENGTH": "4096"}}, `use the "ctx_size" setting`},
		{"ollama home env", Config{Kind: KindOllama, Model: "qwen3-vl-4b-q8_0.gguf", MMProj: mm, Env: map[string]string{"HOME": "/root"}}, "env: HOME is set by vlmfleet"},
		{"ollama extra args", Config{Kind: KindOllama, Model: "qwen3-vl-4b-q8_0.gguf", MMProj: mm, ExtraArgs: []string{"--verbose"}}, "extra_args: ollama serve takes its settings from the environment"},
		{"ollama gpu layers", Config{Kind: KindOllama, Model: "qwen3-vl-4b-q8_0.gguf", MMProj: mm, GPULayers: intp(10)}, "gpu_layers: only for kind llamacpp; Ollama decides the offload itself"},
		{"ollama api key", Config{Kind: KindOllama, Model: "qwen3-vl-4b-q8_0.gguf", MMProj: mm, APIKey: "k"}, "api_key: Ollama has no API key"},
		{"ollama served name", Config{Kind: KindOllama, Model: "qwen3-vl-4b-q8_0.gguf", MMProj: mm, ServedName: "Qwen VL"}, `served_name: "Qwen VL" is not an Ollama model name`},
		{"ollama vllm setting", Config{Kind: KindOllama, Model: "qwen3-vl-4b-q8_0.gguf", MMProj: mm, MaxModelLen: 4096}, "max_model_len: only for " + kindsReading("max_model_len") + "; set the context with ctx_size"},
		{"vllm ok", Config{Kind: KindVLLM, Model: "Qwen3-VL-4B-Instruct"}, ""},
		{"mmproj on vllm", Config{Kind: KindVLLM, Model: "Qwen3-VL-4B-Instruct", MMProj: mm}, "mmproj: only for kinds llamacpp and ollama; vLLM reads the vision tower from the checkpoint"},
		{"vllm no model", Config{Kind: KindVLLM}, "model: missing"},
		{"empty command", Config{Kind: KindVLLM, Command: []string{""}, Model: "Qwen3-VL-4B-Instruct"}, "command[0]: empty"},
		{"absolute outside roots", Config{Kind: KindVLLM, Model: outside}, "outside the model roots"},
		{"dot-dot", Config{Kind: KindLlamaCpp, Model: "../" + filepath.Base(outside) + "/evil.gguf", MMProj: mm}, `climbs out with ".."`},
		{"absolute dot-dot", Config{Kind: KindLlamaCpp, Model: root + "/../" + filepath.Base(outside) + "/evil.gguf", MMProj: mm}, "outside the model roots"},
		{"symlink file escapes", Config{Kind: KindLlamaCpp, Model: "escape.gguf", MMProj: mm}, "resolves to"},
		{"symlink dir escapes", Config{Kind: KindLlamaCpp, Model: root + "/escape-dir/evil.gguf", MMProj: mm}, "outside the model roots"},
		{"symlink dir escapes, missing file", Config{Kind: KindLlamaCpp, Model: root + "/escape-dir/new.gguf", MMProj: mm}, "outside the model roots"},
		{"dangling symlink", Config{Kind: KindLlamaCpp, Model: root + "/dangling.gguf", MMProj: mm}, "symlink whose target does not exist"},
		{"symlink inside ok", Config{Kind: KindLlamaCpp, Model: "link-inside.gguf", MMProj: mm}, ""},
		{"mmproj escapes", Config{Kind: KindLlamaCpp, Model: "qwen3-vl-4b-q8_0.gguf", MMProj: "escape.gguf"}, "mmproj:"},
		{"relative not found", Config{Kind: KindLlamaCpp, Model: "nope.gguf", MMProj: mm}, "not found under any model root"},
		{"vllm relative not found, not a hub id", Config{Kind: KindVLLM, Model: "a/b/c"}, "not found under any model root"},
		{"not gguf", Config{Kind: KindLlamaCpp, Model: "Qwen3-VL-4B-Instruct", MMProj: mm}, "not a .gguf file"},
		{"no mmproj", Config{Kind: KindLlamaCpp, Model: "qwen3-vl-4b-q8_0.gguf"}, "mmproj: missing"},
		{"managed flag", Config{Kind: KindVLLM, Model: "Qwen3-VL-4B-Instruct", ExtraArgs: []string{"--port=9"}}, "extra_args[0]: --port is set by vlmfleet"},
		{"managed flag with field", Config{Kind: KindLlamaCpp, Model: "qwen3-vl-4b-q8_0.gguf", MMProj: mm, ExtraArgs: []string{"-c", "4096"}}, `use the "ctx_size" setting`},
		{"gpu util", Config{Kind: KindVLLM, Model: "Qwen3-VL-4B-Instruct", GPUMemoryUtilization: 1.5}, "gpu_memory_utilization: 1.5"},
		{"llama setting on vllm", Config{Kind: KindVLLM, Model: "Qwen3-VL-4B-Instruct", CtxSize: 4096}, "ctx_size: only for kinds llamacpp and ollama; use max_model_len and gpu_memory_utilization with vLLM"},
		{"vllm setting on llama", Config{Kind: KindLlamaCpp, Model: "qwen3-vl-4b-q8_0.gguf", MMProj: mm, Dtype: "half"}, "dtype: only for " + kindsReading("dtype") + "; a GGUF file carries its number format"},
		{"negative layers", Config{Kind: KindLlamaCpp, Model: "qwen3-vl-4b-q8_0.gguf", MMProj: mm, GPULayers: intp(-1)}, "gpu_layers: -1"},
		{"env name", Config{Kind: KindVLLM, Model: "Qwen3-VL-4B-Instruct", Env: map[string]string{"A=B": "c"}}, "env: variable name"},
		{"drop cache on external", Config{Kind: KindExternal, URL: "http://127.0.0.1:1/v1", DropPageCache: true}, "drop_page_cache: only applies"},
		{"external ok", Config{Kind: KindExternal, URL: "http://127.0.0.1:11434/v1", Model: "qwen2.5vl:7b"}, ""},
		{"external no url", Config{Kind: KindExternal}, "url: missing"},
		{"external bad scheme", Config{Kind: KindExternal, URL: "file:///etc/passwd"}, "want http:// or https://"},
		{"external credentials", Config{Kind: KindExternal, URL: "http://u:p@host/v1"}, "carries credentials"},
		{"external command", Config{Kind: KindExternal, URL: "http://h/v1", Command: []string{"x"}}, "runs nothing"},
		{"sim no device", Config{Kind: KindSim, SimModel: "x"}, "sim_device: missing"},
		{"sim unknown device", Config{Kind: KindSim, SimDevice: "Commodore 64", SimModel: "x"}, "sim_device/sim_model"},
		{"sim speedup", Config{Kind: KindSim, SimDevice: "a", SimModel: "b", SimSpeedup: -1}, "sim_speedup: -1"},
		{"sim slow motion", Config{Kind: KindSim, SimDevice: "a", SimModel: "b", SimSpeedup: 0.5}, "sim_speedup: 0.5; want 0 (real time) or at least 1"},
		{"sim speedup NaN", Config{Kind: KindSim, SimDevice: "a", SimModel: "b", SimSpeedup: math.NaN()}, "sim_speedup: NaN"},
		{"sim speedup Inf", Config{Kind: KindSim, SimDevice: "a", SimModel: "b", SimSpeedup: math.Inf(1)}, "sim_speedup: +Inf"},
		{"negative timeout", Config{Kind: KindVLLM, Model: "Qwen3-VL-4B-Instruct", StartupTimeout: -1}, "startup_timeout"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.cfg.Validate(env.Env)
			if c.want == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error = %v, want it to contain %q", err, c.want)
			}
			if _, nerr := New(c.cfg, env.Env); nerr == nil {
				t.Error("New accepted what Validate refused")
			}
		})
	}
}

// A model root reached through a symlink still holds its models, and
// no roots at all means no model files.
func TestModelRoots(t *testing.T) {
	real := t.TempDir()
	if err := os.WriteFile(filepath.Join(real, "m.gguf"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "models")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	got, err := resolveModelPath("model", filepath.Join(link, "m.gguf"), []string{link}, false)
	if err != nil || got != filepath.Join(link, "m.gguf") {
		t.Errorf("through a linked root: %q, %v", got, err)
	}
	if _, err := resolveModelPath("model", filepath.Join(real, "m.gguf"), nil, false); err == nil || !strings.Contains(err.Error(), "no model roots are configured") {
		t.Errorf("no roots: %v", err)
	}
	if _, err := resolveModelPath("model", "/x.gguf", []string{"relative/root"}, false); err == nil || !strings.Contains(err.Error(), "model_roots[0]") {
		t.Errorf("relative root: %v", err)
	}
}

// startup_timeout reads "10m", "90s" and seconds from YAML and JSON.
func TestDurationDecoding(t *testing.T) {
	for _, c := range []struct {
		doc  string
		want time.Duration
	}{
		{"kind: vllm\nstartup_timeout: 10m\n", 10 * time.Minute},
		{"kind: vllm\nstartup_timeout: \"90s\"\n", 90 * time.Second},
		{"kind: vllm\nstartup_timeout: '1h30m'\n", 90 * time.Minute},
		{"kind: vllm\nstartup_timeout: 600\n", 10 * time.Minute},
		{"kind: vllm\n", 0},
	} {
		var cfg Config
		if err := yaml.Unmarshal([]byte(c.doc), &cfg); err != nil {
			t.Errorf("yaml %q: %v", c.doc, err)
			continue
		}
		if time.Duration(cfg.StartupTimeout) != c.want {
			t.Errorf("yaml %q: %v, want %v", c.doc, time.Duration(cfg.StartupTimeout), c.want)
		}
	}
	var cfg Config
	if err := yaml.Unmarshal([]byte("startup_timeout: soon\n"), &cfg); err == nil || !strings.Contains(err.Error(), "soon") {
		t.Errorf("bad YAML duration: %v", err)
	}
	for doc, want := range map[string]time.Duration{`{"startup_timeout":"10m"}`: 10 * time.Minute, `{"startup_timeout":90}`: 90 * time.Second} {
		var c struct {
			StartupTimeout Duration `json:"startup_timeout"`
		}
		if err := json.Unmarshal([]byte(doc), &c); err != nil || time.Duration(c.StartupTimeout) != want {
			t.Errorf("json %s: %v, %v", doc, time.Duration(c.StartupTimeout), err)
		}
	}
	b, err := json.Marshal(Duration(15 * time.Minute))
	if err != nil || string(b) != `"15m0s"` {
		t.Errorf("marshal: %s %v", b, err)
	}
}

// A whole deployment's engine block as the agent's YAML writes it.
func TestConfigYAML(t *testing.T) {
	doc := `
kind: llamacpp
command: ["/opt/llama.cpp/build/bin/llama-server"]
model: qwen3-vl-4b-q8_0.gguf
mmproj: mmproj-qwen3-vl-4b-f16.gguf
gpu_layers: 0
ctx_size: 32768
extra_args: ["-fa", "on"]
env: {CUDA_VISIBLE_DEVICES: "0"}
startup_timeout: 5m
`
	var cfg Config
	if err := yaml.Unmarshal([]byte(doc), &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.GPULayers == nil || *cfg.GPULayers != 0 || cfg.CtxSize != 32768 || cfg.Env["CUDA_VISIBLE_DEVICES"] != "0" ||
		time.Duration(cfg.StartupTimeout) != 5*time.Minute || len(cfg.ExtraArgs) != 2 {
		t.Errorf("decoded %+v", cfg)
	}
	if err := cfg.Validate(newTestEnv(t).Env); err != nil {
		t.Error(err)
	}
}

func TestRedact(t *testing.T) {
	got := redact([]string{"docker", "run", "-e", "HF_TOKEN=hf_abc", "--env", "X=1", "img", "--api-key", "k1", "--api-key=k2", "--hf-token", "t"})
	want := []string{"docker", "run", "-e", "HF_TOKEN=***", "--env", "X=***", "img", "--api-key", "***", "--api-key=***", "--hf-token", "***"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("redact = %q", got)
	}
}

// Real time (0) and any speedup of at least 1 are valid: the agent scales
// those back; the range between 0 and 1 is refused above.
func TestSimSpeedupAccepted(t *testing.T) {
	env := newTestEnv(t)
	p := simengine.Profiles()[0]
	for _, sp := range []float64{0, 1, 1.5, 50} {
		cfg := Config{Kind: KindSim, SimDevice: p.Device, SimModel: p.Model, SimQuantization: p.Quantization, SimEngine: p.Engine, SimSpeedup: sp}
		if err := cfg.Validate(env.Env); err != nil {
			t.Errorf("sim_speedup %g: %v", sp, err)
		}
	}
}

// The registry: kinds are listed sorted, a kind it does not know waits a
// minute, and every kind vlmfleet starts has a default command. The
// default waits of the known kinds are held to docs/engines.md
// (TestDocsKindTable).
func TestKindTable(t *testing.T) {
	names := Kinds()
	if len(names) == 0 || !slices.IsSorted(names) {
		t.Errorf("Kinds() = %q, want the registered kinds sorted", names)
	}
	if got := DefaultStartupTimeout("unknown"); got != time.Minute {
		t.Errorf("DefaultStartupTimeout(unknown) = %s, want 1m", got)
	}
	var started []string
	for _, k := range processKinds() {
		started = append(started, k.name())
		if len(k.command) == 0 || k.command[0] == "" {
			t.Errorf("%s: no default command", k.name())
		}
	}
	if got := kindsReading("mmproj"); got != "kinds llamacpp and ollama" {
		t.Errorf("kindsReading(mmproj) = %q", got)
	}
	if got := kindsReading("gpu_layers"); got != "kind llamacpp" {
		t.Errorf("kindsReading(gpu_layers) = %q", got)
	}
	if got := processKindNames(); len(started) < 2 || got != strings.Join(started[:len(started)-1], ", ")+" and "+started[len(started)-1] {
		t.Errorf("processKindNames() = %q for %q", got, started)
	}
}
