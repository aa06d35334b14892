package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"
)

// ollamaAdapter runs `ollama serve` with a server of its own: its own port,
// model store and home, so that neither a user's Ollama nor its models take
// part in the measurement. Once the server answers, the configured GGUF
// files are imported with a Modelfile (`ollama create`) and the model is
// loaded before anything is measured.
type ollamaAdapter struct{}

// KindOllama is Ollama, started as `ollama serve` with the GGUF files
// imported into a model store of its own; NameOllama is how people know it.
const (
	KindOllama = "ollama"
	NameOllama = "Ollama"
)

// ollamaKind waits 10 minutes for readiness by default: Ollama copies the
// files into its store before it loads them. `ollama serve` takes no
// flags, so extra_args are refused altogether (checkOllama) rather than
// flag by flag.
var ollamaKind = processKind{
	processAdapter: ollamaAdapter{},
	command:        []string{"ollama"},
	timeout:        10 * time.Minute,
	reads:          []string{"mmproj", "ctx_size"},
	refusals: ggufRefusals(map[string]string{
		"gpu_layers":            "Ollama decides the offload itself; remove it",
		"enable_prefix_caching": "Ollama has no switch for its prompt cache",
	}),
}

func init() { register(ollamaKind) }

// check refuses what Ollama takes no part in or vlmfleet sets itself, and
// makes the served name one Ollama accepts.
func (ollamaAdapter) check(r *resolved, env Env) error {
	c := r.Config
	if err := checkOllama(c); err != nil {
		return err
	}
	if err := checkModelAndSizes(c, ".gguf file under a model root (Ollama imports it with its projector)"); err != nil {
		return err
	}
	if err := resolveGGUF(r, env, "vlmfleet's Ollama import", "Ollama"); err != nil {
		return err
	}
	if c.ServedName == "" {
		r.served = ollamaDefaultName(r.served)
	}
	// The Modelfile quotes the paths; a quote or a line break would end them.
	for _, p := range [...]struct{ field, path string }{{"model", r.model}, {"mmproj", r.mmproj}} {
		if strings.ContainsAny(p.path, "\"\n\r") {
			return fmt.Errorf("%s: %q: a path with a double quote or a line break cannot be written in an Ollama Modelfile", p.field, p.path)
		}
	}
	return nil
}

// checkOllama refuses the settings Ollama takes no part in or vlmfleet sets itself.
func checkOllama(c Config) error {
	if len(c.ExtraArgs) > 0 {
		return fmt.Errorf("extra_args: ollama serve takes its settings from the environment; use env (for example OLLAMA_FLASH_ATTENTION: \"1\")")
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

func (ollamaAdapter) kind() string        { return KindOllama }
func (ollamaAdapter) displayName() string { return NameOllama }

// ollamaManagedEnv are the variables vlmfleet sets for `ollama serve`, with
// the config field to use instead ("" when the workload or the port decides).
var ollamaManagedEnv = map[string]string{
	"OLLAMA_HOST":              "",
	"OLLAMA_MODELS":            "",
	"HOME":                     "",
	"OLLAMA_NUM_PARALLEL":      "",
	"OLLAMA_CONTEXT_LENGTH":    "ctx_size",
	"OLLAMA_KEEP_ALIVE":        "",
	"OLLAMA_MAX_LOADED_MODELS": "",
}

// ollamaModelName is a model name `ollama create` accepts, with an optional tag.
var ollamaModelName = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,79}(:[a-z0-9_][a-z0-9_.-]{0,79})?$`)

// ollamaSizing is the parallelism and per-sequence context for the needs.
// Ollama 0.17.4 gives the runner OLLAMA_CONTEXT_LENGTH × OLLAMA_NUM_PARALLEL
// tokens of cache (llm/server.go: KvSize = NumCtx * numParallel), so the
// context it is told is what each sequence gets.
func ollamaSizing(r *resolved, needs Needs) (parallel, perSeq, needed int) {
	parallel = needs.MaxCameras
	needed = slotTokens(needs)
	if counted := needs.MaxImages * ollamaImageTokens; counted > largestImageTokens(needs) {
		needed = ceilDiv(requestTokens(needs)+counted-largestImageTokens(needs), 256) * 256
	}
	perSeq = needed
	if r.CtxSize > 0 {
		perSeq = r.CtxSize
	}
	return parallel, perSeq, needed
}

// ollamaImageTokens is what Ollama 0.17.4 counts an image as when it fits
// a chat into the context (server/prompt.go), whatever the image's size:
// a prompt it finds too long is cut, and its usage counts what was kept
// (measured with the tiny model: a 320x240 picture of 36 tokens and 260
// tokens of text came out as 35 prompt tokens at a context of 1024).
const ollamaImageTokens = 768

func (ollamaAdapter) args(r *resolved, port int, needs Needs, log zerolog.Logger) ([]string, map[string]string) {
	parallel, perSeq, needed := ollamaSizing(r, needs)
	if r.CtxSize > 0 && perSeq < needed {
		log.Warn().Int("ctx_size", perSeq).Int("needed", needed).
			Msg("ctx_size is below the estimate for the workload: requests with the most images at the largest size may be truncated or refused")
	}
	var a []string
	if len(r.command) == 0 || r.command[len(r.command)-1] != "serve" {
		a = append(a, "serve")
	}
	props := map[string]string{
		"num_parallel":      strconv.Itoa(parallel),
		"context_length":    strconv.Itoa(perSeq),
		"ctx_needed":        strconv.Itoa(needed),
		"image_tokens_est":  strconv.Itoa(imageTokens(needs.MaxWidth, needs.MaxHeight)),
		"ctx_size_from_cfg": strconv.FormatBool(r.CtxSize > 0),
		"keep_alive":        "-1",
	}
	// The user's own OLLAMA_* settings (flash attention, KV cache type)
	// change what is measured, so they are recorded with the run.
	for k, v := range r.Env {
		if strings.HasPrefix(k, "OLLAMA_") {
			props["env."+k] = v
		}
	}
	return a, props
}

// ollamaState is the directory holding the server's model store and home.
// It outlives one start, so that importing the same GGUF files again finds
// their blobs already stored instead of copying gigabytes each time.
func ollamaState(logDir string) string { return filepath.Join(logDir, "ollama") }

// processEnv is the environment `ollama serve` and `ollama create` share.
func (ollamaAdapter) processEnv(r *resolved, port int, needs Needs, logDir string) (map[string]string, error) {
	state := ollamaState(logDir)
	models, home := filepath.Join(state, "models"), filepath.Join(state, "home")
	for _, d := range []string{models, home} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("ollama state: %w", err)
		}
	}
	parallel, perSeq, _ := ollamaSizing(r, needs)
	return map[string]string{
		"OLLAMA_HOST":           "127.0.0.1:" + strconv.Itoa(port),
		"OLLAMA_MODELS":         models,
		"HOME":                  home,
		"OLLAMA_NUM_PARALLEL":   strconv.Itoa(parallel),
		"OLLAMA_CONTEXT_LENGTH": strconv.Itoa(perSeq),
		// Ollama unloads an idle model after 5 minutes; a sweep's pauses
		// must not turn the next combination's warm-up into a model load.
		"OLLAMA_KEEP_ALIVE":        "-1",
		"OLLAMA_MAX_LOADED_MODELS": "1",
		// A lab device need not reach ollama.com.
		"OLLAMA_NO_CLOUD": "1",
	}, nil
}

// ready needs the API to answer; the model is imported and loaded after.
func (ollamaAdapter) ready(ctx context.Context, p *prober, root string, r *resolved) error {
	if err := p.get200(ctx, root+"/api/version"); err != nil {
		return fmt.Errorf("GET /api/version: %w", err)
	}
	return nil
}

// modelfile imports the model and its projector: Ollama takes the second
// FROM of a GGUF with a vision encoder as the projector.
func ollamaModelfile(r *resolved) string {
	return fmt.Sprintf("FROM %q\nFROM %q\n", r.model, r.mmproj)
}

// afterReady imports the GGUF files under the served name and loads the
// model, so that neither counts as the first request's time.
func (a ollamaAdapter) afterReady(ctx context.Context, s afterReadyEnv) (map[string]string, error) {
	mf := filepath.Join(ollamaState(s.logDir), "Modelfile."+strings.ReplaceAll(s.r.served, ":", "_"))
	if err := os.WriteFile(mf, []byte(ollamaModelfile(s.r)), 0o600); err != nil {
		return nil, fmt.Errorf("write Modelfile: %w", err)
	}
	argv := append(ollamaClient(s.r.command), "create", s.r.served, "-f", mf)
	fmt.Fprintf(s.logf, "vlmfleet: importing with %s\n", strings.Join(argv, " "))
	start := time.Now()
	if err := runLogged(ctx, argv, s.env, s.logf, s.getenv); err != nil {
		return nil, fmt.Errorf("%s: %w", strings.Join(argv, " "), err)
	}
	props := map[string]string{"import_s": fmt.Sprintf("%.1f", time.Since(start).Seconds())}

	start = time.Now()
	fmt.Fprintf(s.logf, "vlmfleet: loading %s\n", s.r.served)
	if err := ollamaLoad(ctx, s.root, s.r.served); err != nil {
		return nil, err
	}
	props["load_s"] = fmt.Sprintf("%.1f", time.Since(start).Seconds())
	return props, nil
}

// ollamaClient is the command prefix without a trailing "serve": the same
// executable is Ollama's client.
func ollamaClient(command []string) []string {
	c := append([]string(nil), command...)
	if len(c) > 1 && c[len(c)-1] == "serve" {
		c = c[:len(c)-1]
	}
	return c
}

// ollamaLoad asks the server to load the model and keep it: a generate
// request without a prompt returns once the runner has it in memory.
func ollamaLoad(ctx context.Context, root, name string) error {
	body, _ := json.Marshal(map[string]any{"model": name, "keep_alive": -1})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, root+"/api/generate", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	client := &http.Client{Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("load %s: POST /api/generate: %w", name, err)
	}
	defer resp.Body.Close()
	var out struct {
		Done  bool   `json:"done"`
		Error string `json:"error"`
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if err != nil {
		return fmt.Errorf("load %s: POST /api/generate: %w", name, err)
	}
	if resp.StatusCode != http.StatusOK {
		if json.Unmarshal(b, &out) == nil && out.Error != "" {
			return fmt.Errorf("load %s: HTTP %d: %s", name, resp.StatusCode, out.Error)
		}
		return fmt.Errorf("load %s: HTTP %d %s", name, resp.StatusCode, snippet(b))
	}
	if err := json.Unmarshal(b, &out); err != nil || !out.Done {
		return fmt.Errorf("load %s: unexpected answer %s", name, snippet(b))
	}
	return nil
}

// ollamaParallelRefused is what Ollama logs when it serves a model family
// one request at a time whatever OLLAMA_NUM_PARALLEL says (Qwen3-VL, mllama, ...).
const ollamaParallelRefused = "does not currently support parallel requests"

func (ollamaAdapter) describe(ctx context.Context, p *prober, root string, r *resolved) (string, map[string]string) {
	props := map[string]string{}
	var v struct {
		Version string `json:"version"`
	}
	if err := p.getJSON(ctx, root+"/api/version", &v); err != nil {
		props["version_error"] = err.Error()
	}
	var tags struct {
		Models []struct {
			Name    string `json:"name"`
			Model   string `json:"model"`
			Digest  string `json:"digest"`
			Size    int64  `json:"size"`
			Details struct {
				Family            string `json:"family"`
				ParameterSize     string `json:"parameter_size"`
				QuantizationLevel string `json:"quantization_level"`
			} `json:"details"`
		} `json:"models"`
	}
	if err := p.getJSON(ctx, root+"/api/tags", &tags); err != nil {
		props["tags_error"] = err.Error()
	}
	for _, m := range tags.Models {
		if ollamaSame(m.Name, r.served) || ollamaSame(m.Model, r.served) {
			props["model_digest"] = m.Digest
			props["model_size"] = strconv.FormatInt(m.Size, 10)
			props["family"] = m.Details.Family
			props["parameter_size"] = m.Details.ParameterSize
			props["quantization_level"] = m.Details.QuantizationLevel
		}
	}
	var ps struct {
		Models []struct {
			Name          string `json:"name"`
			Model         string `json:"model"`
			SizeVRAM      int64  `json:"size_vram"`
			ContextLength int    `json:"context_length"`
		} `json:"models"`
	}
	if err := p.getJSON(ctx, root+"/api/ps", &ps); err == nil {
		for _, m := range ps.Models {
			if ollamaSame(m.Name, r.served) || ollamaSame(m.Model, r.served) {
				props["loaded_context_length"] = strconv.Itoa(m.ContextLength)
				props["size_vram"] = strconv.FormatInt(m.SizeVRAM, 10)
			}
		}
	}
	return strings.TrimSpace(v.Version), props
}

// ollamaSame compares model names as Ollama does: no tag means ":latest".
func ollamaSame(a, b string) bool {
	norm := func(s string) string {
		if !strings.Contains(s, ":") {
			s += ":latest"
		}
		return strings.ToLower(s)
	}
	return a != "" && norm(a) == norm(b)
}

// ollamaVersionLine is what `ollama --version` prints: "ollama version is 0.17.4"
// (with a warning first when no server answers).
var ollamaVersionLine = regexp.MustCompile(`version is\s+(\S+)`)

func (ollamaAdapter) parseVersion(out string) string {
	if m := ollamaVersionLine.FindStringSubmatch(out); m != nil {
		return m[1]
	}
	return strings.TrimSpace(lastLines(out, 1))
}

func (ollamaAdapter) versionArgv(command []string) []string {
	return subcommandVersionArgv(command, "serve")
}

// startedWithoutCache: Ollama has no switch for its prompt cache.
func (ollamaAdapter) startedWithoutCache([]string) bool { return false }

// switches: Ollama's OpenAI API takes neither a cache switch nor a way to
// pass the end of the answer.
func (ollamaAdapter) switches() RequestSwitches { return RequestSwitches{} }

// recognise: /api/version is Ollama's own.
func (ollamaAdapter) recognise(ctx context.Context, p *prober, root, _ string) (serverID, evidence) {
	if v := versionAt(ctx, p, root+"/api/version"); v != "" {
		return serverID{version: v}, fingerprint
	}
	return serverID{}, notIt
}

// checkLog warns about what Ollama decided against the configuration.
func (ollamaAdapter) checkLog(tail string, props map[string]string, log zerolog.Logger) {
	if strings.Contains(tail, ollamaParallelRefused) {
		props["num_parallel_effective"] = "1"
		log.Warn().Str("num_parallel", props["num_parallel"]).
			Msg("Ollama serves this model family one request at a time whatever OLLAMA_NUM_PARALLEL says; more cameras than one will queue")
	}
}

// runLogged runs argv to completion with env, its output in logf, in a
// process group of its own that ctx's end kills whole.
func runLogged(ctx context.Context, argv []string, env []string, logf *os.File, getenv func(string) string) error {
	path, err := lookPath(argv[0], getenv)
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, path, argv[1:]...)
	cmd.Args[0] = argv[0]
	cmd.Env = env
	cmd.Dir = filepath.Dir(logf.Name())
	cmd.Stdout = logf
	cmd.Stderr = logf
	inNewGroup(cmd)
	cmd.Cancel = func() error { return signalGroup(cmd.Process.Pid, sigKill()) }
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("%w (%v)", ctx.Err(), err)
		}
		return err
	}
	return nil
}
