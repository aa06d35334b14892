package engine

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"time"
)

// processKind is a kind vlmfleet starts as a child process (proc.go): the
// checks all of them share, then the adapter's own.
type processKind struct {
	processAdapter
	// command is the executable when the config names none.
	command string
	timeout time.Duration
	// managed are the flags vlmfleet sets itself, with the config field to
	// use instead ("" when the port or the workload decides). Letting
	// extra_args repeat them would silently override the port the agent
	// probes or the concurrency the workload needs.
	managed map[string]string
}

// processAdapter is the adapter of a kind with the checks of its own
// settings.
type processAdapter interface {
	adapter
	// check validates the kind's settings once the shared ones passed and
	// fills in r's model, projector and served name.
	check(r *resolved, env Env) error
}

func (k processKind) name() string                  { return k.kind() }
func (k processKind) startupTimeout() time.Duration { return k.timeout }

func (k processKind) newEngine(r *resolved, env Env) Engine {
	return newProcEngine(r, env, k.processAdapter)
}

func (k processKind) resolve(r *resolved, env Env) error {
	if err := k.resolveCommand(r); err != nil {
		return err
	}
	for i, a := range r.ExtraArgs {
		if strings.ContainsRune(a, 0) {
			return fmt.Errorf("extra_args[%d]: contains a NUL byte", i)
		}
		name, _, _ := strings.Cut(a, "=")
		if field, ok := k.managed[name]; ok {
			if field == "" {
				return fmt.Errorf("extra_args[%d]: %s is set by vlmfleet (from the port it picks or the workload); remove it", i, name)
			}
			return fmt.Errorf("extra_args[%d]: %s is set by vlmfleet; use the %q setting instead", i, name, field)
		}
	}
	return k.check(r, env)
}

func (k processKind) resolveCommand(r *resolved) error {
	r.command = append([]string(nil), r.Command...)
	if len(r.command) == 0 {
		r.command = []string{k.command}
	}
	if strings.TrimSpace(r.command[0]) == "" {
		return fmt.Errorf("command[0]: empty; name the %s executable, e.g. %q", k.name(), k.command)
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
	return nil
}

// checkModelAndSizes checks what every started engine reads: a model
// (described by want when it is missing) and sizes that are not negative.
func checkModelAndSizes(c Config, want string) error {
	if c.Model == "" {
		return fmt.Errorf("model: missing; want a %s", want)
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
	return nil
}

// resolveGGUF resolves the model and projector files of an engine that
// serves GGUF files (llama.cpp, Ollama), named in the errors as server
// (what serves GGUF files only) and projectorUser (what needs the
// projector). The served name defaults to the model file's name.
func resolveGGUF(r *resolved, env Env, server, projectorUser string) error {
	c := r.Config
	if c.Quantization != "" || c.Dtype != "" || c.MaxModelLen != 0 || c.GPUMemoryUtilization != 0 || c.EnablePrefixCaching {
		return fmt.Errorf("quantization/dtype/max_model_len/gpu_memory_utilization/enable_prefix_caching: only for kind vllm; a GGUF file carries its quantization, and llama.cpp sizes its context with ctx_size")
	}
	if !strings.HasSuffix(strings.ToLower(c.Model), ".gguf") {
		return fmt.Errorf("model: %q is not a .gguf file; %s serves GGUF files only", c.Model, server)
	}
	m, err := resolveModelPath("model", c.Model, env.ModelRoots, false)
	if err != nil {
		return err
	}
	r.model = m
	if c.MMProj == "" {
		return fmt.Errorf("mmproj: missing; %s needs the vision projector .gguf (mmproj-*.gguf next to the model) to accept images", projectorUser)
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
	}
	return nil
}
