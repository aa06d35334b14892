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

// KindSGLang is SGLang, started as `python3 -m sglang.launch_server` on a
// Hugging Face checkpoint; NameSGLang is how people know it.
const (
	KindSGLang = "sglang"
	NameSGLang = "SGLang"
)

// sglangKind waits 15 minutes for readiness by default: like vLLM, SGLang
// loads the weights and captures CUDA graphs before it serves.
var sglangKind = processKind{
	processAdapter: sglangAdapter{},
	command:        []string{"python3", "-m", sglangModule},
	timeout:        15 * time.Minute,
	managed: map[string]string{
		"--host":                 "",
		"--port":                 "",
		"--max-running-requests": "",
		"--model-path":           "model",
		"--model":                "model",
		"--served-model-name":    "served_name",
		"--context-length":       "max_model_len",
		"--tp-size":              "tensor_parallel_size",
		"--tp":                   "tensor_parallel_size",
		"--tensor-parallel-size": "tensor_parallel_size",
		"--mem-fraction-static":  "gpu_memory_utilization",
		"--quantization":         "quantization",
		"--dtype":                "dtype",
		sglangRadixCacheOff:      "enable_prefix_caching",
		"--api-key":              "api_key",
	},
	reads: []string{"quantization", "dtype", "max_model_len", "gpu_memory_utilization", "enable_prefix_caching",
		"tensor_parallel_size"},
	refusals: checkpointRefusals(NameSGLang),
}

func init() { register(sglangKind) }

const (
	// sglangModule is the server's module, run with python -m.
	sglangModule = "sglang.launch_server"
	// sglangRadixCacheOff keeps SGLang's radix cache, which shares the KV
	// cache of a common prefix between requests, from answering a
	// repeated prompt or picture.
	sglangRadixCacheOff = "--disable-radix-cache"
	// sglangVersionCode prints the installed SGLang's version in the
	// interpreter that runs the server (sglang/version.py).
	sglangVersionCode = "from sglang.version import __version__; print(__version__)"
)

// sglangAdapter runs SGLang's server module.
type sglangAdapter struct{}

func (sglangAdapter) kind() string        { return KindSGLang }
func (sglangAdapter) displayName() string { return NameSGLang }

// check takes a checkpoint directory under a model root or a hub id.
func (sglangAdapter) check(r *resolved, env Env) error { return resolveCheckpoint(r, env) }

// args builds the server's options; the command ends with the module.
func (sglangAdapter) args(r *resolved, port int, needs Needs, log zerolog.Logger) ([]string, map[string]string) {
	a := []string{
		"--model-path", r.model,
		"--host", "127.0.0.1",
		"--port", strconv.Itoa(port),
		"--served-model-name", r.served,
	}
	a = append(a, contextAndMemoryArgs(r, needs, log, "SGLang", "--context-length", "--mem-fraction-static")...)
	// Every camera keeps one request in flight: fewer running requests
	// than cameras would queue inside SGLang and count the queueing as
	// TTFT. Its KV pool is sized by the memory fraction, so a search's
	// levels cost it little, as with vLLM.
	running := max(needs.MaxCameras, needs.SearchCameras)
	a = append(a, "--max-running-requests", strconv.Itoa(running))
	if r.Quantization != "" {
		a = append(a, "--quantization", r.Quantization)
	}
	if r.Dtype != "" {
		a = append(a, "--dtype", r.Dtype)
	}
	if r.TensorParallelSize > 1 {
		a = append(a, "--tp-size", strconv.Itoa(r.TensorParallelSize))
	}
	// The radix cache would recognise the shared prompt and repeated
	// frames and flatter TTFT; a real camera never sends the same frame twice.
	if !r.EnablePrefixCaching {
		a = append(a, sglangRadixCacheOff)
	}
	if r.APIKey != "" {
		a = append(a, "--api-key", r.APIKey)
	}
	a = append(a, r.ExtraArgs...)
	return a, map[string]string{
		"request_tokens_est":   strconv.Itoa(requestTokens(needs)),
		"max_running_requests": strconv.Itoa(running),
		"radix_cache":          strconv.FormatBool(r.EnablePrefixCaching),
	}
}

// ready needs /health to answer 200 (503 while the server warms up) and
// /v1/models to list the served name.
func (sglangAdapter) ready(ctx context.Context, p *prober, root string, r *resolved) error {
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

// sglangServerInfo is the part of GET /get_server_info (the server's
// arguments, the scheduler's figures and the version) vlmfleet records.
type sglangServerInfo struct {
	Version           string `json:"version"`
	ModelPath         string `json:"model_path"`
	TPSize            int    `json:"tp_size"`
	MaxTotalNumTokens int    `json:"max_total_num_tokens"`
	DisableRadixCache *bool  `json:"disable_radix_cache"`
}

// serverInfo reads GET /get_server_info: the version, and the properties
// a run records.
func (sglangAdapter) serverInfo(ctx context.Context, p *prober, root string) (string, map[string]string, error) {
	var si sglangServerInfo
	if err := p.getJSON(ctx, root+"/get_server_info", &si); err != nil {
		return "", nil, err
	}
	if si.Version == "" && si.ModelPath == "" {
		return "", nil, fmt.Errorf("GET %s/get_server_info: neither a version nor a model path", root)
	}
	props := map[string]string{}
	for name, n := range map[string]int{"tp_size": si.TPSize, "max_total_num_tokens": si.MaxTotalNumTokens} {
		if n > 0 {
			props[name] = strconv.Itoa(n)
		}
	}
	if si.DisableRadixCache != nil {
		props["radix_cache_disabled"] = strconv.FormatBool(*si.DisableRadixCache)
	}
	return strings.TrimSpace(si.Version), props, nil
}

func (a sglangAdapter) describe(ctx context.Context, p *prober, root string, r *resolved) (string, map[string]string) {
	version, props, err := a.serverInfo(ctx, p, root)
	if err != nil {
		props = map[string]string{"server_info_error": err.Error()}
	}
	if ml, err := p.listsModel(ctx, root+"/v1", r.served); err == nil {
		if m, ok := ml.entry(r.served); ok && m.MaxModelLen > 0 {
			props["max_model_len"] = strconv.Itoa(m.MaxModelLen)
		}
	}
	return version, props
}

// versionArgv asks the interpreter that runs the module for SGLang's
// version. A command that does not end with the module (a wrapper script)
// gets none: its --version would be the wrapper's, or Python's.
func (sglangAdapter) versionArgv(command []string) []string {
	n := len(command)
	if n < 3 || command[n-2] != "-m" || command[n-1] != sglangModule {
		return nil
	}
	return append(append([]string(nil), command[:n-2]...), "-c", sglangVersionCode)
}

func (sglangAdapter) parseVersion(out string) string { return strings.TrimSpace(lastLines(out, 1)) }

func (sglangAdapter) startedWithoutCache(command []string) bool {
	return slices.Contains(command, sglangRadixCacheOff)
}

// switches: SGLang's OpenAI API takes ignore_eos and min_tokens beside
// OpenAI's fields; its cache is switched at start, not per request.
func (sglangAdapter) switches() RequestSwitches {
	return RequestSwitches{ForcedLength: minTokensIgnoreEOS}
}

// recognise: /get_server_info is SGLang's own; without it, the model
// list's owned_by "sglang".
func (a sglangAdapter) recognise(ctx context.Context, p *prober, root, owner string) (serverID, evidence) {
	if version, props, err := a.serverInfo(ctx, p, root); err == nil {
		return serverID{version: version, props: props}, fingerprint
	}
	if owner == "sglang" {
		return serverID{}, ownedBy
	}
	return serverID{}, notIt
}
