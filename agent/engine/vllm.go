package engine

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// KindVLLM is vLLM, started as `vllm serve` on a Hugging Face checkpoint.
const KindVLLM = protocol.EngineVLLM

// vllmKind waits 15 minutes for readiness by default: vLLM compiles and
// captures CUDA graphs before it serves, many minutes on a Jetson.
var vllmKind = processKind{
	processAdapter: vllmAdapter{},
	command:        "vllm",
	timeout:        15 * time.Minute,
	managed: map[string]string{
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
	},
}

// vllmAdapter runs `vllm serve`.
type vllmAdapter struct{}

func (vllmAdapter) kind() string        { return KindVLLM }
func (vllmAdapter) displayName() string { return protocol.EngineNameVLLM }

// check takes a checkpoint directory under a model root or a hub id, and
// refuses the GGUF engines' settings.
func (vllmAdapter) check(r *resolved, env Env) error {
	c := r.Config
	if err := checkModelAndSizes(c, "Hugging Face checkpoint directory under a model root (or a hub id like Qwen/Qwen3-VL-4B-Instruct)"); err != nil {
		return err
	}
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

// args builds `serve MODEL ...`. Each setting is one argv element, so the
// JSON of --limit-mm-per-prompt needs no shell quoting.
func (vllmAdapter) args(r *resolved, port int, needs Needs, log zerolog.Logger) ([]string, map[string]string) {
	var a []string
	if len(r.command) == 0 || r.command[len(r.command)-1] != "serve" {
		a = append(a, "serve")
	}
	a = append(a, r.model,
		"--host", "127.0.0.1",
		"--port", strconv.Itoa(port),
		"--served-model-name", r.served)
	if r.MaxModelLen > 0 {
		a = append(a, "--max-model-len", strconv.Itoa(r.MaxModelLen))
		if est := requestTokens(needs); r.MaxModelLen < est {
			log.Warn().Int("max_model_len", r.MaxModelLen).Int("estimated_request_tokens", est).
				Msg("max_model_len may be too small for the largest request of the workload; vLLM will refuse those requests")
		}
	}
	if r.GPUMemoryUtilization > 0 {
		a = append(a, "--gpu-memory-utilization", strconv.FormatFloat(r.GPUMemoryUtilization, 'f', -1, 64))
	}
	// Every camera keeps one request in flight: fewer sequences than cameras
	// would queue requests inside vLLM and count the queueing as TTFT. A
	// search's levels get theirs too: vLLM sizes its cache by
	// gpu_memory_utilization, not by sequences, so they cost it little
	// (llama.cpp and Ollama size theirs by slot, and keep the ladder's).
	seqs := max(needs.MaxCameras, needs.SearchCameras)
	mm := fmt.Sprintf(`{"image":%d}`, needs.MaxImages)
	a = append(a,
		"--max-num-seqs", strconv.Itoa(seqs),
		"--limit-mm-per-prompt", mm)
	if r.Quantization != "" {
		a = append(a, "--quantization", r.Quantization)
	}
	if r.Dtype != "" {
		a = append(a, "--dtype", r.Dtype)
	}
	// A prefix cache would recognise the shared prompt and repeated frames
	// and flatter TTFT; a real camera never sends the same frame twice.
	if r.EnablePrefixCaching {
		a = append(a, "--enable-prefix-caching")
	} else {
		a = append(a, "--no-enable-prefix-caching")
	}
	if r.APIKey != "" {
		a = append(a, "--api-key", r.APIKey)
	}
	a = append(a, r.ExtraArgs...)
	props := map[string]string{
		"request_tokens_est":  strconv.Itoa(requestTokens(needs)),
		"max_num_seqs":        strconv.Itoa(seqs),
		"limit_mm_per_prompt": mm,
		"prefix_caching":      strconv.FormatBool(r.EnablePrefixCaching),
	}
	return a, props
}

// ready needs /health to answer 200 and /v1/models to list the served name:
// the API server can accept connections before the engine is built.
func (vllmAdapter) ready(ctx context.Context, p *prober, root string, r *resolved) error {
	code, body, err := p.get(ctx, root+"/health")
	if err != nil {
		return fmt.Errorf("GET /health: %w", err)
	}
	if code != http.StatusOK {
		return fmt.Errorf("GET /health: HTTP %d %s", code, snippet(body))
	}
	_, err = p.listsModel(ctx, root+"/v1", r.served)
	return err
}

func (vllmAdapter) describe(ctx context.Context, p *prober, root string, r *resolved) (string, map[string]string) {
	props := map[string]string{}
	if ml, err := p.listsModel(ctx, root+"/v1", r.served); err == nil {
		for _, m := range ml.Data {
			if m.ID == r.served && m.MaxModelLen > 0 {
				props["max_model_len"] = strconv.Itoa(m.MaxModelLen)
			}
		}
	}
	var v struct {
		Version string `json:"version"`
	}
	if err := p.getJSON(ctx, root+"/version", &v); err != nil {
		return "", props
	}
	return strings.TrimSpace(v.Version), props
}

// parseVersion takes the last non-empty line: `vllm --version` may log
// INFO lines before the bare version.
func (vllmAdapter) parseVersion(out string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" {
			return l
		}
	}
	return ""
}
