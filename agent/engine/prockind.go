package engine

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"
)

// processKind is a kind vlmfleet starts as a child process (proc.go): the
// checks all of them share, then the adapter's own.
type processKind struct {
	processAdapter
	// command is the executable and its first arguments when the config
	// names none, e.g. ["python3", "-m", "sglang.launch_server"].
	command []string
	timeout time.Duration
	// managed are the flags vlmfleet sets itself, with the config field to
	// use instead ("" when the port or the workload decides). Letting
	// extra_args repeat them would silently override the port the agent
	// probes or the concurrency the workload needs.
	managed map[string]string
	// reads are the settings of kindSettings the kind takes; a config
	// that sets another is refused, naming the kinds that take it.
	reads []string
	// refusals add the kind's advice to the refusal of a setting it does
	// not read ("vLLM reads the vision tower from the checkpoint").
	refusals map[string]string
}

// kindSettings are the settings only some started kinds read, with
// whether a config sets each.
var kindSettings = []struct {
	name string
	set  func(Config) bool
}{
	{"mmproj", func(c Config) bool { return c.MMProj != "" }},
	{"quantization", func(c Config) bool { return c.Quantization != "" }},
	{"dtype", func(c Config) bool { return c.Dtype != "" }},
	{"max_model_len", func(c Config) bool { return c.MaxModelLen != 0 }},
	{"tensor_parallel_size", func(c Config) bool { return c.TensorParallelSize != 0 }},
	{"gpu_memory_utilization", func(c Config) bool { return c.GPUMemoryUtilization != 0 }},
	{"enable_prefix_caching", func(c Config) bool { return c.EnablePrefixCaching }},
	{"gpu_layers", func(c Config) bool { return c.GPULayers != nil }},
	{"ctx_size", func(c Config) bool { return c.CtxSize != 0 }},
}

// kindsReading names the started kinds that read setting, as an error
// says it: "kind vllm", "kinds llamacpp and ollama".
func kindsReading(setting string) string {
	var names []string
	for _, k := range processKinds() {
		if slices.Contains(k.reads, setting) {
			names = append(names, k.name())
		}
	}
	if len(names) == 1 {
		return "kind " + names[0]
	}
	return "kinds " + sentence(names)
}

// checkReads refuses the first setting of kindSettings the config sets
// that the kind does not read.
func (k processKind) checkReads(c Config) error {
	for _, s := range kindSettings {
		if !s.set(c) || slices.Contains(k.reads, s.name) {
			continue
		}
		msg := fmt.Sprintf("%s: only for %s", s.name, kindsReading(s.name))
		if why := k.refusals[s.name]; why != "" {
			msg += "; " + why
		}
		return errors.New(msg)
	}
	return nil
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
	if err := k.checkReads(r.Config); err != nil {
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
		r.command = append([]string(nil), k.command...)
	}
	if strings.TrimSpace(r.command[0]) == "" {
		return fmt.Errorf("command[0]: empty; name the %s executable, e.g. %s", k.name(), quotedList(k.command))
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
	if c.TensorParallelSize < 0 {
		return fmt.Errorf("tensor_parallel_size: %d is negative; want the GPUs to split the model over, or 0 for 1", c.TensorParallelSize)
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

// ggufRefusals is the advice of a kind that serves GGUF files when a
// config sets what a checkpoint's engine reads, with the kind's own.
func ggufRefusals(own map[string]string) map[string]string {
	m := map[string]string{
		"quantization":           "a GGUF file carries its quantization",
		"dtype":                  "a GGUF file carries its number format",
		"max_model_len":          "set the context with ctx_size",
		"gpu_memory_utilization": "the memory follows from the file and ctx_size",
	}
	maps.Copy(m, own)
	return m
}

// resolveCheckpoint resolves the model of an engine that serves a Hugging
// Face checkpoint: a directory under a model root, or a hub id the engine
// downloads. The served name defaults to the checkpoint's base name.
func resolveCheckpoint(r *resolved, env Env) error {
	c := r.Config
	if err := checkModelAndSizes(c, "Hugging Face checkpoint directory under a model root (or a hub id like Qwen/Qwen3-VL-4B-Instruct)"); err != nil {
		return err
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

// checkpointRefusals is the advice of the kinds that serve checkpoints
// when a config sets what a GGUF engine reads.
func checkpointRefusals(engine string) map[string]string {
	return map[string]string{
		"mmproj":     engine + " reads the vision tower from the checkpoint",
		"ctx_size":   "use max_model_len and gpu_memory_utilization with " + engine,
		"gpu_layers": "use gpu_memory_utilization with " + engine,
	}
}

// subcommandVersionArgv asks the executable of a command that ends with
// a subcommand (`vllm serve`, `ollama serve`, perhaps behind a container
// wrapper) for its version: the subcommand gives way to --version.
func subcommandVersionArgv(command []string, sub string) []string {
	argv := append([]string(nil), command...)
	if len(argv) >= 2 && argv[len(argv)-1] == sub {
		argv = argv[:len(argv)-1]
	}
	return append(argv, "--version")
}

// quotedList writes argv as the config's YAML list would: ["a", "b"].
func quotedList(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = fmt.Sprintf("%q", a)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// contextAndMemoryArgs are the flags of a server that takes its context
// length and its share of GPU memory on the command line, as vLLM and
// SGLang do: lenFlag and memFlag are its names for them, engine its name
// in the warning a context shorter than the workload's largest request
// draws (the server would refuse those requests).
func contextAndMemoryArgs(r *resolved, needs Needs, log zerolog.Logger, engine, lenFlag, memFlag string) []string {
	var a []string
	if r.MaxModelLen > 0 {
		a = append(a, lenFlag, strconv.Itoa(r.MaxModelLen))
		if est := requestTokens(needs); r.MaxModelLen < est {
			log.Warn().Int("max_model_len", r.MaxModelLen).Int("estimated_request_tokens", est).
				Msg("max_model_len may be too small for the largest request of the workload; " + engine + " will refuse those requests")
		}
	}
	if r.GPUMemoryUtilization > 0 {
		a = append(a, memFlag, strconv.FormatFloat(r.GPUMemoryUtilization, 'f', -1, 64))
	}
	return a
}
