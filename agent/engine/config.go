package engine

import (
	"fmt"
	"math"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/vlmfleet/vlmfleet/agent/simengine"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// Engine kinds, as written in the agent's config.
const (
	KindVLLM     = protocol.EngineVLLM
	KindLlamaCpp = protocol.EngineLlamaCpp
	KindOllama   = protocol.EngineOllama
	KindExternal = protocol.EngineExternal
	KindSim      = protocol.EngineSim
)

// Config is one deployment's engine settings from the agent's LOCAL YAML
// config. Nothing in it ever comes from the network: the controller names a
// deployment by id and the agent looks these settings up itself.
type Config struct {
	Kind string `yaml:"kind" json:"kind"` // vllm | llamacpp | ollama | external | sim
	// Command is the executable's argv prefix, e.g. ["vllm"],
	// ["/opt/llama.cpp/llama-server"] or a container wrapper
	// ["docker","run",...,"vllm/vllm-openai"]. Default per kind: "vllm",
	// "llama-server", "ollama" (whose client imports the model too).
	Command []string `yaml:"command" json:"command"`
	// Model is a Hugging Face checkpoint directory or hub id (vllm) or a
	// .gguf file (llamacpp, ollama). Local paths must lie under Env.ModelRoots; a
	// relative path is looked up under each root in turn.
	Model string `yaml:"model" json:"model"`
	// MMProj is the vision projector .gguf (under ModelRoots) of llamacpp and ollama.
	MMProj     string `yaml:"mmproj" json:"mmproj"`
	ServedName string `yaml:"served_name" json:"served_name"`
	// URL is the external server's base URL, ".../v1".
	URL    string `yaml:"url" json:"url"`
	APIKey string `yaml:"api_key" json:"-"`

	MaxModelLen          int     `yaml:"max_model_len" json:"max_model_len,omitempty"`
	GPUMemoryUtilization float64 `yaml:"gpu_memory_utilization" json:"gpu_memory_utilization,omitempty"`
	Quantization         string  `yaml:"quantization" json:"quantization,omitempty"` // vllm --quantization
	Dtype                string  `yaml:"dtype" json:"dtype,omitempty"`
	EnablePrefixCaching  bool    `yaml:"enable_prefix_caching" json:"enable_prefix_caching,omitempty"`
	// GPULayers is llama.cpp's -ngl; nil means 999 (every layer).
	GPULayers *int `yaml:"gpu_layers" json:"gpu_layers,omitempty"`
	// CtxSize is llama.cpp's -c (shared by its slots), or Ollama's
	// OLLAMA_CONTEXT_LENGTH (each parallel sequence's); 0 means computed
	// from the workload's needs.
	CtxSize   int               `yaml:"ctx_size" json:"ctx_size,omitempty"`
	ExtraArgs []string          `yaml:"extra_args" json:"extra_args,omitempty"`
	Env       map[string]string `yaml:"env" json:"-"`
	// StartupTimeout bounds the wait for readiness; 0 means the kind's default.
	StartupTimeout Duration `yaml:"startup_timeout" json:"startup_timeout,omitempty"`
	// DropPageCache writes 3 to /proc/sys/vm/drop_caches before starting the
	// engine. On a Jetson the page cache sits in the same memory as the GPU's,
	// and vLLM's free-memory check at startup fails when it is full (vllm issue #48140).
	DropPageCache bool `yaml:"drop_page_cache" json:"drop_page_cache,omitempty"`

	// Simulated engine (kind sim).
	SimDevice       string  `yaml:"sim_device" json:"sim_device,omitempty"`
	SimModel        string  `yaml:"sim_model" json:"sim_model,omitempty"`
	SimQuantization string  `yaml:"sim_quantization" json:"sim_quantization,omitempty"`
	SimEngine       string  `yaml:"sim_engine" json:"sim_engine,omitempty"`
	SimSpeedup      float64 `yaml:"sim_speedup" json:"sim_speedup,omitempty"`
}

// Kinds returns the engine kinds an agent can be configured with.
func Kinds() []string { return []string{KindVLLM, KindLlamaCpp, KindOllama, KindExternal, KindSim} }

// DefaultStartupTimeout is how long a kind may take to become ready when the
// config does not say: vLLM compiles and captures CUDA graphs (many minutes
// on a Jetson), llama.cpp only loads the file, Ollama copies it into its
// store first.
func DefaultStartupTimeout(kind string) time.Duration {
	switch kind {
	case KindVLLM:
		return 15 * time.Minute
	case KindLlamaCpp, KindOllama:
		return 10 * time.Minute
	}
	return time.Minute
}

// defaultCommand is the executable used when the config names none.
func defaultCommand(kind string) []string {
	switch kind {
	case KindVLLM:
		return []string{"vllm"}
	case KindLlamaCpp:
		return []string{"llama-server"}
	case KindOllama:
		return []string{"ollama"}
	}
	return nil
}

// managedFlags are the flags vlmfleet sets itself, with the config field to
// use instead. Letting extra_args repeat them would silently override the
// port the agent probes or the concurrency the workload needs.
func managedFlags(kind string) map[string]string {
	switch kind {
	case KindVLLM:
		return map[string]string{
			"--host":                     "",
			"--port":                     "",
			"--max-num-seqs":             "",
			"--limit-mm-per-prompt":      "",
			"--served-model-name":        "served_name",
			"--model":                    "model",
			"--max-model-len":            "max_model_len",
			"--gpu-memory-utilization":   "gpu_memory_utilization",
			"--quantization":             "quantization",
			"-q":                         "quantization",
			"--dtype":                    "dtype",
			"--enable-prefix-caching":    "enable_prefix_caching",
			"--no-enable-prefix-caching": "enable_prefix_caching",
			"--api-key":                  "api_key",
		}
	case KindLlamaCpp:
		return map[string]string{
			"--host":         "",
			"--port":         "",
			"-np":            "",
			"--parallel":     "",
			"-m":             "model",
			"--model":        "model",
			"--mmproj":       "mmproj",
			"-mm":            "mmproj",
			"-ngl":           "gpu_layers",
			"--gpu-layers":   "gpu_layers",
			"--n-gpu-layers": "gpu_layers",
			"-c":             "ctx_size",
			"--ctx-size":     "ctx_size",
			"-a":             "served_name",
			"--alias":        "served_name",
			"--api-key":      "api_key",
		}
	}
	return nil
}

// Validate reports the first setting that is wrong, naming the field and what
// is allowed. Model paths are resolved against env.ModelRoots.
func (c Config) Validate(env Env) error {
	_, err := c.resolve(env)
	return err
}

// resolved is a validated config with its model paths made absolute.
type resolved struct {
	Config
	command []string
	model   string // absolute path, or a Hugging Face hub id (vllm)
	mmproj  string
	served  string
	timeout time.Duration
	profile simengine.Profile
}

func (c Config) resolve(env Env) (*resolved, error) {
	r := &resolved{Config: c}
	switch c.Kind {
	case KindVLLM, KindLlamaCpp, KindOllama, KindExternal, KindSim:
	case "":
		return nil, fmt.Errorf("kind: missing; want one of %s", strings.Join(Kinds(), ", "))
	default:
		return nil, fmt.Errorf("kind: %q; want one of %s", c.Kind, strings.Join(Kinds(), ", "))
	}
	if c.StartupTimeout < 0 {
		return nil, fmt.Errorf("startup_timeout: %s is negative", c.StartupTimeout)
	}
	r.timeout = time.Duration(c.StartupTimeout)
	if r.timeout == 0 {
		r.timeout = DefaultStartupTimeout(c.Kind)
	}
	for k := range c.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return nil, fmt.Errorf("env: variable name %q: must be non-empty without '=' or NUL", k)
		}
	}
	if c.DropPageCache && c.Kind != KindVLLM && c.Kind != KindLlamaCpp && c.Kind != KindOllama {
		return nil, fmt.Errorf("drop_page_cache: only applies to kinds vllm, llamacpp and ollama, which vlmfleet starts itself")
	}
	switch c.Kind {
	case KindVLLM, KindLlamaCpp, KindOllama:
		if err := c.resolveProcess(env, r); err != nil {
			return nil, err
		}
	case KindExternal:
		if err := c.resolveExternal(r); err != nil {
			return nil, err
		}
	case KindSim:
		if err := c.resolveSim(r); err != nil {
			return nil, err
		}
	}
	return r, nil
}

func (c Config) resolveProcess(env Env, r *resolved) error {
	r.command = append([]string(nil), c.Command...)
	if len(r.command) == 0 {
		r.command = defaultCommand(c.Kind)
	}
	if strings.TrimSpace(r.command[0]) == "" {
		return fmt.Errorf("command[0]: empty; name the %s executable, e.g. %q", c.Kind, defaultCommand(c.Kind)[0])
	}
	for i, a := range r.command {
		if strings.ContainsRune(a, 0) {
			return fmt.Errorf("command[%d]: contains a NUL byte", i)
		}
	}
	// The engine runs in the log directory, so a relative executable path
	// is fixed against the agent's working directory now.
	if strings.ContainsRune(r.command[0], filepath.Separator) && !filepath.IsAbs(r.command[0]) {
		abs, err := filepath.Abs(r.command[0])
		if err != nil {
			return fmt.Errorf("command[0]: %w", err)
		}
		r.command[0] = abs
	}
	for i, a := range c.ExtraArgs {
		if strings.ContainsRune(a, 0) {
			return fmt.Errorf("extra_args[%d]: contains a NUL byte", i)
		}
		name, _, _ := strings.Cut(a, "=")
		if field, ok := managedFlags(c.Kind)[name]; ok {
			if field == "" {
				return fmt.Errorf("extra_args[%d]: %s is set by vlmfleet (from the port it picks or the workload); remove it", i, name)
			}
			return fmt.Errorf("extra_args[%d]: %s is set by vlmfleet; use the %q setting instead", i, name, field)
		}
	}
	if c.Kind == KindOllama {
		if err := c.checkOllama(); err != nil {
			return err
		}
	}
	if c.Model == "" {
		return fmt.Errorf("model: missing; want a %s", map[string]string{
			KindVLLM:     "Hugging Face checkpoint directory under a model root (or a hub id like Qwen/Qwen3-VL-4B-Instruct)",
			KindLlamaCpp: ".gguf file under a model root",
			KindOllama:   ".gguf file under a model root (Ollama imports it with its projector)"}[c.Kind])
	}
	if c.MaxModelLen < 0 {
		return fmt.Errorf("max_model_len: %d is negative", c.MaxModelLen)
	}
	if c.GPUMemoryUtilization < 0 || c.GPUMemoryUtilization > 1 || math.IsNaN(c.GPUMemoryUtilization) {
		return fmt.Errorf("gpu_memory_utilization: %g; want a fraction in (0, 1], or 0 for the engine's default", c.GPUMemoryUtilization)
	}
	if c.CtxSize < 0 {
		return fmt.Errorf("ctx_size: %d is negative; want 0 (computed) or a token count", c.CtxSize)
	}
	if c.GPULayers != nil && *c.GPULayers < 0 {
		return fmt.Errorf("gpu_layers: %d is negative; want 0..999 (999 = every layer)", *c.GPULayers)
	}
	if c.Kind == KindVLLM {
		if c.MMProj != "" {
			return fmt.Errorf("mmproj: only for kinds llamacpp and ollama; vLLM reads the vision tower from the checkpoint")
		}
		if c.CtxSize != 0 || c.GPULayers != nil {
			return fmt.Errorf("ctx_size/gpu_layers: only for kind llamacpp; use max_model_len and gpu_memory_utilization with vllm")
		}
		m, err := resolveModelPath("model", c.Model, env.ModelRoots, true)
		if err != nil {
			return err
		}
		r.model = m
		r.served = c.ServedName
		if r.served == "" {
			r.served = baseName(c.Model)
		}
		return nil
	}
	if c.Quantization != "" || c.Dtype != "" || c.MaxModelLen != 0 || c.GPUMemoryUtilization != 0 || c.EnablePrefixCaching {
		return fmt.Errorf("quantization/dtype/max_model_len/gpu_memory_utilization/enable_prefix_caching: only for kind vllm; a GGUF file carries its quantization, and llama.cpp sizes its context with ctx_size")
	}
	if !strings.HasSuffix(strings.ToLower(c.Model), ".gguf") {
		return fmt.Errorf("model: %q is not a .gguf file; %s serves GGUF files only", c.Model, map[string]string{KindLlamaCpp: "llama.cpp", KindOllama: "vlmfleet's Ollama import"}[c.Kind])
	}
	m, err := resolveModelPath("model", c.Model, env.ModelRoots, false)
	if err != nil {
		return err
	}
	r.model = m
	if c.MMProj == "" {
		return fmt.Errorf("mmproj: missing; %s needs the vision projector .gguf (mmproj-*.gguf next to the model) to accept images", map[string]string{KindLlamaCpp: "llama-server", KindOllama: "Ollama"}[c.Kind])
	}
	if !strings.HasSuffix(strings.ToLower(c.MMProj), ".gguf") {
		return fmt.Errorf("mmproj: %q is not a .gguf file", c.MMProj)
	}
	if r.mmproj, err = resolveModelPath("mmproj", c.MMProj, env.ModelRoots, false); err != nil {
		return err
	}
	r.served = c.ServedName
	if r.served == "" {
		r.served = strings.TrimSuffix(baseName(c.Model), ".gguf")
		if c.Kind == KindOllama {
			r.served = ollamaDefaultName(r.served)
		}
	}
	if c.Kind == KindOllama {
		// The Modelfile quotes the paths; a quote or a line break would end them.
		for field, p := range map[string]string{"model": r.model, "mmproj": r.mmproj} {
			if strings.ContainsAny(p, "\"\n\r") {
				return fmt.Errorf("%s: %q: a path with a double quote or a line break cannot be written in an Ollama Modelfile", field, p)
			}
		}
	}
	return nil
}

// checkOllama refuses what Ollama takes no part in or vlmfleet sets itself.
func (c Config) checkOllama() error {
	if len(c.ExtraArgs) > 0 {
		return fmt.Errorf("extra_args: ollama serve takes its settings from the environment; use env (for example OLLAMA_FLASH_ATTENTION: \"1\")")
	}
	if c.GPULayers != nil {
		return fmt.Errorf("gpu_layers: Ollama decides the offload itself; remove it")
	}
	if c.APIKey != "" {
		return fmt.Errorf("api_key: Ollama has no API key; vlmfleet starts it on loopback only")
	}
	for k := range c.Env {
		if field, ok := ollamaManagedEnv[k]; ok {
			if field == "" {
				return fmt.Errorf("env: %s is set by vlmfleet (from the port it picks, its own model store or the workload); remove it", k)
			}
			return fmt.Errorf("env: %s is set by vlmfleet; use the %q setting instead", k, field)
		}
	}
	if c.ServedName != "" && !ollamaModelName.MatchString(c.ServedName) {
		return fmt.Errorf("served_name: %q is not an Ollama model name; want lower-case letters, digits, '_', '-', '.', optionally :tag (e.g. qwen3-vl-4b:q8_0)", c.ServedName)
	}
	return nil
}

// ollamaDefaultName makes an Ollama model name of a file name.
func ollamaDefaultName(base string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(base) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '_', r == '-', r == '.':
			b.WriteRune(r)
		default:
			b.WriteRune('-')
		}
	}
	name := strings.TrimLeft(b.String(), "_-.")
	if len(name) > 80 {
		name = name[:80]
	}
	if name == "" {
		name = "model"
	}
	return name
}

func (c Config) resolveExternal(r *resolved) error {
	if len(c.Command) > 0 || len(c.ExtraArgs) > 0 {
		return fmt.Errorf("command/extra_args: kind external runs nothing; vlmfleet only talks to the server at url")
	}
	if c.URL == "" {
		return fmt.Errorf("url: missing; want the server's base URL ending in /v1, e.g. http://127.0.0.1:11434/v1")
	}
	u, err := url.Parse(c.URL)
	if err != nil {
		return fmt.Errorf("url: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("url: %q; want http:// or https:// with a host, e.g. http://127.0.0.1:8000/v1", c.URL)
	}
	if u.User != nil {
		return fmt.Errorf("url: carries credentials; put the key in api_key instead")
	}
	// The model is a name on the remote server, never a local file; with
	// neither model nor served_name, any model the server lists will do.
	r.model = c.Model
	if r.model == "" {
		r.model = c.ServedName
	}
	r.served = r.model
	return nil
}

func (c Config) resolveSim(r *resolved) error {
	if len(c.Command) > 0 || len(c.ExtraArgs) > 0 || c.URL != "" {
		return fmt.Errorf("command/extra_args/url: kind sim runs in-process and takes none of them")
	}
	if c.SimDevice == "" {
		return fmt.Errorf("sim_device: missing; want a simulated device such as \"Jetson AGX Orin\"")
	}
	if c.SimModel == "" {
		return fmt.Errorf("sim_model: missing; want a simulated model such as \"Qwen3-VL-4B-Instruct\"")
	}
	// The agent scales a simulated run's times back only for speedups above
	// one, so a slow-motion factor would be published unscaled as the device's.
	if c.SimSpeedup != 0 && !(c.SimSpeedup >= 1) || math.IsInf(c.SimSpeedup, 0) {
		return fmt.Errorf("sim_speedup: %g; want 0 (real time) or at least 1", c.SimSpeedup)
	}
	p, err := simengine.Lookup(c.SimDevice, c.SimModel, c.SimQuantization, c.SimEngine)
	if err != nil {
		return fmt.Errorf("sim_device/sim_model/sim_quantization/sim_engine: %w", err)
	}
	r.profile = p
	r.model = c.SimModel
	r.served = c.ServedName
	if r.served == "" {
		r.served = c.SimModel
	}
	return nil
}

func baseName(p string) string {
	p = strings.TrimRight(p, "/")
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[i+1:]
	}
	return p
}
