package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"
)

// KindLlamaCpp is llama.cpp's llama-server, started on a GGUF file and
// its vision projector; NameLlamaCpp is how people know it.
const (
	KindLlamaCpp = "llamacpp"
	NameLlamaCpp = "llama.cpp"
)

// llamaKind waits 10 minutes for readiness by default: llama-server only
// loads the file, with nothing to compile.
var llamaKind = processKind{
	processAdapter: llamaAdapter{},
	command:        []string{"llama-server"},
	timeout:        10 * time.Minute,
	managed: map[string]string{
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
	},
	reads: []string{"mmproj", "gpu_layers", "ctx_size"},
	refusals: ggufRefusals(map[string]string{
		"enable_prefix_caching": "llama.cpp's prompt cache is switched per request (the workload's cache_prompt)",
	}),
}

func init() { register(llamaKind) }

// llamaAdapter runs llama.cpp's llama-server.
type llamaAdapter struct{}

// check takes a GGUF model and projector under the model roots.
func (llamaAdapter) check(r *resolved, env Env) error {
	if err := checkModelAndSizes(r.Config, ".gguf file under a model root"); err != nil {
		return err
	}
	return resolveGGUF(r, env, "llama.cpp", "llama-server")
}

func (llamaAdapter) kind() string        { return KindLlamaCpp }
func (llamaAdapter) displayName() string { return NameLlamaCpp }

// defaultGPULayers offloads every layer; llama.cpp caps it at the model's count.
const defaultGPULayers = 999

func (llamaAdapter) args(r *resolved, port int, needs Needs, log zerolog.Logger) ([]string, map[string]string) {
	ngl := defaultGPULayers
	if r.GPULayers != nil {
		ngl = *r.GPULayers
	}
	// One slot per camera: a request beyond the slot count waits in
	// llama-server's queue, and the wait would count as TTFT.
	parallel := needs.MaxCameras
	perSlot := slotTokens(needs)
	needed := parallel * perSlot
	nctx := needed
	props := map[string]string{
		"parallel":          strconv.Itoa(parallel),
		"n_gpu_layers":      strconv.Itoa(ngl),
		"ctx_needed":        strconv.Itoa(needed),
		"image_tokens_est":  strconv.Itoa(largestImageTokens(needs)),
		"slot_tokens_est":   strconv.Itoa(perSlot),
		"ctx_size_from_cfg": strconv.FormatBool(r.CtxSize > 0),
	}
	if r.CtxSize > 0 {
		nctx = r.CtxSize
		if nctx < needed {
			log.Warn().Int("ctx_size", nctx).Int("needed", needed).Int("parallel", parallel).
				Msg("ctx_size is below the estimate for the workload: each of the slots gets ctx_size/parallel tokens, and requests with the most images at the largest size may be refused")
		}
	}
	props["ctx_size"] = strconv.Itoa(nctx)
	a := []string{
		"-m", r.model,
		"--mmproj", r.mmproj,
		"--host", "127.0.0.1",
		"--port", strconv.Itoa(port),
		"-ngl", strconv.Itoa(ngl),
		"-c", strconv.Itoa(nctx),
		"-np", strconv.Itoa(parallel),
		"--metrics",
		"--no-webui",
	}
	if r.ServedName != "" {
		a = append(a, "--alias", r.ServedName)
	}
	if r.APIKey != "" {
		a = append(a, "--api-key", r.APIKey)
	}
	return append(a, r.ExtraArgs...), props
}

// Context estimate. llama.cpp divides -c evenly among the -np slots, so
// every slot must hold the largest request on its own.
const (
	// pixelsPerImageToken is a 14-pixel ViT patch merged 2×2 (Qwen2-VL,
	// Qwen2.5-VL): 28×28 pixels per token. Models with 16-pixel patches
	// (Qwen3-VL) or a fixed token count per image (Gemma) use fewer, so the
	// estimate errs on the large side.
	pixelsPerImageToken = 28
	// maxImageTokens caps one image, as the projectors cap max_pixels.
	maxImageTokens = 16384
	// promptTokens covers the chat template, the text prompt and the image
	// delimiters; contextMargin absorbs tokenizer differences.
	promptTokens  = 256
	contextMargin = 256
)

// imageTokens estimates the tokens one w×h image becomes.
func imageTokens(w, h int) int {
	t := ceilDiv(w, pixelsPerImageToken)*ceilDiv(h, pixelsPerImageToken) + 2 // + start/end markers
	return min(t, maxImageTokens)
}

// largestImageTokens is the image tokens of the largest request of the
// plan: the largest of its shapes, or with none known, MaxImages images
// of MaxWidth×MaxHeight.
func largestImageTokens(n Needs) int {
	if len(n.Shapes) == 0 {
		return n.MaxImages * imageTokens(n.MaxWidth, n.MaxHeight)
	}
	most := 0
	for _, s := range n.Shapes {
		most = max(most, s.Images*imageTokens(s.Width, s.Height))
	}
	return most
}

// requestTokens estimates the largest request with its answer.
func requestTokens(n Needs) int {
	return largestImageTokens(n) + promptTokens + n.TextTokens + n.MaxTokens + contextMargin
}

// slotTokens is requestTokens rounded up to a multiple of 256.
func slotTokens(n Needs) int { return ceilDiv(requestTokens(n), 256) * 256 }

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// ready waits for /health to answer 200; llama-server answers 503
// {"error":{"message":"Loading model"}} while it loads.
func (llamaAdapter) ready(ctx context.Context, p *prober, root string, r *resolved) error {
	code, body, err := p.get(ctx, root+"/health")
	if err != nil {
		return fmt.Errorf("GET /health: %w", err)
	}
	if code == http.StatusOK {
		return nil
	}
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil && e.Error.Message != "" {
		return fmt.Errorf("GET /health: HTTP %d: %s", code, e.Error.Message)
	}
	return fmt.Errorf("GET /health: HTTP %d %s", code, snippet(body))
}

// llamaProps is the part of GET /props vlmfleet records.
type llamaProps struct {
	DefaultGenerationSettings struct {
		NCtx int `json:"n_ctx"`
	} `json:"default_generation_settings"`
	TotalSlots int    `json:"total_slots"`
	BuildInfo  string `json:"build_info"`
	ModelPath  string `json:"model_path"`
	Modalities *struct {
		Vision bool `json:"vision"`
	} `json:"modalities"`
}

func (llamaAdapter) describe(ctx context.Context, p *prober, root string, r *resolved) (string, map[string]string) {
	var lp llamaProps
	if err := p.getJSON(ctx, root+"/props", &lp); err != nil {
		return "", map[string]string{"props_error": err.Error()}
	}
	props := map[string]string{}
	if lp.DefaultGenerationSettings.NCtx > 0 {
		// Per slot in current builds: the context each camera's request gets.
		props["n_ctx"] = strconv.Itoa(lp.DefaultGenerationSettings.NCtx)
	}
	if lp.TotalSlots > 0 {
		props["total_slots"] = strconv.Itoa(lp.TotalSlots)
	}
	if lp.BuildInfo != "" {
		props["build"] = lp.BuildInfo
	}
	if lp.Modalities != nil {
		props["vision"] = strconv.FormatBool(lp.Modalities.Vision)
	}
	return lp.BuildInfo, props
}

func (llamaAdapter) versionArgv(command []string) []string {
	return append(append([]string(nil), command...), "--version")
}

// llamaVersionLine is what `llama-server --version` prints: "version: 6123 (abc1234)".
var llamaVersionLine = regexp.MustCompile(`version:\s*(\d+)\s*\(([0-9A-Fa-f]+)\)`)

// parseVersion returns the build as /props writes it: "b6123-abc1234".
func (llamaAdapter) parseVersion(out string) string {
	if m := llamaVersionLine.FindStringSubmatch(out); m != nil {
		return "b" + m[1] + "-" + m[2]
	}
	return strings.TrimSpace(lastLines(out, 1))
}

// startedWithoutCache: llama-server has no switch at start; its cache
// is turned off per request (switches).
func (llamaAdapter) startedWithoutCache([]string) bool { return false }

// switches: cache_prompt lets a request reuse the slot's cached prompt;
// ignore_eos keeps the answer going to max_tokens.
func (llamaAdapter) switches() RequestSwitches {
	return RequestSwitches{
		CacheField: "cache_prompt",
		ForcedLength: func(n int) map[string]any {
			return map[string]any{"max_tokens": n, "ignore_eos": true}
		},
	}
}

// recognise reads llama-server's /props: an answer with build_info or
// total_slots is llama.cpp's, and says its build and slots (what a
// started one records). Without it, the model list's owned_by "llamacpp".
func (a llamaAdapter) recognise(ctx context.Context, p *prober, root, owner string) (serverID, evidence) {
	build, props := a.describe(ctx, p, root, nil)
	if props["props_error"] == "" && (build != "" || props["total_slots"] != "") {
		return serverID{version: build, props: props}, fingerprint
	}
	if owner == "llamacpp" {
		return serverID{version: versionAt(ctx, p, root+"/version")}, ownedBy
	}
	return serverID{}, notIt
}
