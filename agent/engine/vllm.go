package engine

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"
)

// KindVLLM is vLLM, started as `vllm serve` on a Hugging Face checkpoint;
// NameVLLM is how people know it.
const (
	KindVLLM = "vllm"
	NameVLLM = "vLLM"
)

// vllmKind waits 15 minutes for readiness by default: vLLM compiles and
// captures CUDA graphs before it serves, many minutes on a Jetson.
var vllmKind = processKind{
	processAdapter: vllmAdapter{},
	command:        []string{"vllm"},
	timeout:        15 * time.Minute,
	managed: map[string]string{
		"--host":                     "",
		"--port":                     "",
		"--max-num-seqs":             "",
		"--limit-mm-per-prompt":      "",
		"--served-model-name":        "served_name",
		"--model":                    "model",
		"--max-model-len":            "max_model_len",
		"--tensor-parallel-size":     "tensor_parallel_size",
		"-tp":                        "tensor_parallel_size",
		"--gpu-memory-utilization":   "gpu_memory_utilization",
		"--quantization":             "quantization",
		"-q":                         "quantization",
		"--dtype":                    "dtype",
		"--enable-prefix-caching":    "enable_prefix_caching",
		"--no-enable-prefix-caching": "enable_prefix_caching",
		"--api-key":                  "api_key",
	},
	reads: []string{"quantization", "dtype", "max_model_len", "gpu_memory_utilization", "enable_prefix_caching",
		"tensor_parallel_size"},
	refusals: checkpointRefusals(NameVLLM),
}

func init() { register(vllmKind) }

// vllmAdapter runs `vllm serve`.
type vllmAdapter struct{}

func (vllmAdapter) kind() string        { return KindVLLM }
func (vllmAdapter) displayName() string { return NameVLLM }

// check takes a checkpoint directory under a model root or a hub id.
func (vllmAdapter) check(r *resolved, env Env) error { return resolveCheckpoint(r, env) }

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
	a = append(a, contextAndMemoryArgs(r, needs, log, "vLLM", "--max-model-len", "--gpu-memory-utilization")...)
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
	if r.TensorParallelSize > 1 {
		a = append(a, "--tensor-parallel-size", strconv.Itoa(r.TensorParallelSize))
	}
	// A prefix cache would recognise the shared prompt and repeated frames
	// and flatter TTFT; a real camera never sends the same frame twice.
	if r.EnablePrefixCaching {
		a = append(a, "--enable-prefix-caching")
	} else {
		a = append(a, vllmPrefixCacheOff)
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

func (vllmAdapter) versionArgv(command []string) []string {
	return subcommandVersionArgv(command, "serve")
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

// vllmPrefixCacheOff is the flag that keeps vLLM from answering a
// repeated prompt or picture from its prefix cache.
const vllmPrefixCacheOff = "--no-enable-prefix-caching"

func (vllmAdapter) startedWithoutCache(command []string) bool {
	return slices.Contains(command, vllmPrefixCacheOff)
}

// switches: vLLM takes ignore_eos and min_tokens as sampling parameters
// beside OpenAI's; its prompt cache is switched at start, not per request.
func (vllmAdapter) switches() RequestSwitches {
	return RequestSwitches{ForcedLength: minTokensIgnoreEOS}
}

// recognise: vLLM's model list says owned_by "vllm"; a bare /version
// with a version in it is vLLM's too when the list names no owner, as
// no other engine vlmfleet knows serves one.
func (vllmAdapter) recognise(ctx context.Context, p *prober, root, owner string) (serverID, evidence) {
	if owner != "" && owner != "vllm" {
		return serverID{}, notIt
	}
	v := versionAt(ctx, p, root+"/version")
	switch {
	case owner == "vllm":
		return serverID{version: v}, ownedBy
	case v != "":
		return serverID{version: v}, weakly
	}
	return serverID{}, notIt
}
