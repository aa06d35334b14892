package engine

import (
	"fmt"
	"strings"
	"time"

	"github.com/vlmfleet/vlmfleet/agent/devicefacts"
	"github.com/vlmfleet/vlmfleet/agent/simengine"
)

// Config is one deployment's engine settings from the agent's LOCAL YAML
// config. Nothing in it ever comes from the network: the controller names a
// deployment by id and the agent looks these settings up itself.
type Config struct {
	// Kind is one of the registered kinds (Kinds).
	Kind string `yaml:"kind" json:"kind"`
	// Command is the executable's argv prefix, e.g. ["vllm"],
	// ["/opt/llama.cpp/llama-server"] or a container wrapper
	// ["docker","run",...,"vllm/vllm-openai"]. Default: the kind's own.
	Command []string `yaml:"command" json:"command"`
	// Model is what the kind serves: a Hugging Face checkpoint directory
	// or hub id, a .gguf file, or a model name on an external server.
	// Local paths must lie under Env.ModelRoots; a relative path is looked
	// up under each root in turn.
	Model string `yaml:"model" json:"model"`
	// MMProj is the vision projector .gguf (under ModelRoots) of a GGUF model.
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
	// TensorParallelSize splits the model over that many GPUs (vLLM's
	// --tensor-parallel-size, SGLang's --tp); 0 means 1. A profile line
	// records it (protocol.Configuration.TP).
	TensorParallelSize int `yaml:"tensor_parallel_size" json:"tensor_parallel_size,omitempty"`
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
	// SimPowerMode is the simulated Jetson's power mode the job runs in,
	// set by the agent after it switched (never from YAML): the simulator
	// scales its GPU-bound times by the mode's GPU throughput (clock cap ×
	// powered TPCs) against the published mode's; see devicefacts.SimPowerFor.
	// Empty: the profile as published (MAXN, MAXN_SUPER on the Orin Nano).
	SimPowerMode string `yaml:"-" json:"sim_power_mode,omitempty"`
	// SimPowerLimitW is the simulated GPU's power limit the job runs
	// under, watts, set by the agent as SimPowerMode is: below the board's
	// default it slows the GPU-bound times. 0: the board's default.
	SimPowerLimitW float64 `yaml:"-" json:"sim_power_limit_w,omitempty"`
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
	kind    engineKind
	command []string
	model   string // absolute path, or a Hugging Face hub id (vllm)
	mmproj  string
	served  string
	timeout time.Duration
	profile simengine.Profile
	// simPower is what SimPowerMode / SimPowerLimitW do to the profile.
	simPower devicefacts.SimPower
}

func (c Config) resolve(env Env) (*resolved, error) {
	k, ok := kindNamed(c.Kind)
	switch {
	case c.Kind == "":
		return nil, fmt.Errorf("kind: missing; want one of %s", strings.Join(Kinds(), ", "))
	case !ok:
		return nil, fmt.Errorf("kind: %q; want one of %s", c.Kind, strings.Join(Kinds(), ", "))
	}
	r := &resolved{Config: c, kind: k}
	if c.StartupTimeout < 0 {
		return nil, fmt.Errorf("startup_timeout: %s is negative", c.StartupTimeout)
	}
	r.timeout = time.Duration(c.StartupTimeout)
	if r.timeout == 0 {
		r.timeout = k.startupTimeout()
	}
	for name := range c.Env {
		if name == "" || strings.ContainsAny(name, "=\x00") {
			return nil, fmt.Errorf("env: variable name %q: must be non-empty without '=' or NUL", name)
		}
	}
	if _, started := k.(processKind); c.DropPageCache && !started {
		return nil, fmt.Errorf("drop_page_cache: only applies to kinds %s, which vlmfleet starts itself", processKindNames())
	}
	if err := k.resolve(r, env); err != nil {
		return nil, err
	}
	return r, nil
}

func baseName(p string) string {
	p = strings.TrimRight(p, "/")
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[i+1:]
	}
	return p
}
