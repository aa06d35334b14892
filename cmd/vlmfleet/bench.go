package main

import (
	"context"
	"crypto/rand"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/vlmfleet/vlmfleet/agent/devicefacts"
	"github.com/vlmfleet/vlmfleet/agent/imageset"
	"github.com/vlmfleet/vlmfleet/agent/loadgen"
	"github.com/vlmfleet/vlmfleet/explorer"
	"github.com/vlmfleet/vlmfleet/internal/termprogress"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// benchOptions are the flags of `vlmfleet bench`.
type benchOptions struct {
	url, model, apiKey        string
	sizes, multiSizes         []string
	cameras, images           []int
	requests, multiRequests   int
	warmup, maxTokens         int
	target                    float64
	unique                    bool
	timeout                   time.Duration
	cachePrompt               *bool
	prompt, imageDir          string
	jsonOut, csvOut           string
	device, engineName, quant string
	modelName                 string
	params                    float64
}

func benchUsage(fs *flag.FlagSet) func() {
	return func() {
		w := fs.Output()
		fmt.Fprint(w, `Usage: vlmfleet bench --url http://HOST:PORT/v1 --model NAME [flags]

Measures an OpenAI-compatible endpoint you already run, with the method of
the explorer: closed-loop cameras at every level of --cameras and size of
--sizes with one image per request, then one camera at every size of
--multi-sizes with each count of --images. Each combination starts with a
discarded warm-up of --warmup requests per camera. Prints TTFT and TPS per
combination and Max Cameras per size: the highest measured number of
cameras whose mean TTFT is at most --target seconds with no failed request
("+" when the highest level tested passes, 0 when none does).

Flags:
`)
		fs.PrintDefaults()
	}
}

func parseBenchFlags(c *cli, args []string) (*benchOptions, error) {
	fs := newFlagSet(c, "bench")
	fs.Usage = benchUsage(fs)
	def := protocol.DefaultWorkload()
	o := &benchOptions{}
	fs.StringVar(&o.url, "url", "", "endpoint base URL ending in /v1 (required)")
	fs.StringVar(&o.model, "model", "", "model name the endpoint serves (required)")
	fs.StringVar(&o.apiKey, "api-key", "", "Bearer token (default $VLMFLEET_API_KEY)")
	sizes := fs.String("sizes", "480p,720p,1080p,2K", "image sizes measured at every camera level, one image per request")
	multiSizes := fs.String("multi-sizes", "", "image sizes measured with one camera and several images (default: --sizes)")
	cameras := fs.String("cameras", "1,2,4,8,16", "camera levels (concurrent closed-loop clients)")
	images := fs.String("images", "1,3,5", "images per request for the one-camera family")
	fs.IntVar(&o.requests, "requests", def.RequestsPerLevel, "measured requests per camera level")
	fs.IntVar(&o.multiRequests, "multi-requests", def.MultiImageRequests, "measured requests per one-camera multi-image combination")
	fs.IntVar(&o.warmup, "warmup", def.WarmupRequests, "discarded warm-up requests per camera before each combination")
	fs.IntVar(&o.maxTokens, "max-tokens", def.MaxTokens, "max_tokens of every request")
	fs.Float64Var(&o.target, "target", 3, "response-time target in seconds for Max Cameras")
	fs.BoolVar(&o.unique, "unique-images", false, "perturb pixels per request so that no engine cache can help")
	fs.DurationVar(&o.timeout, "timeout", 300*time.Second, "bound on one request (0: none)")
	cache := fs.String("cache-prompt", "unset", "send llama.cpp's cache_prompt: true, false or unset (not sent)")
	fs.StringVar(&o.prompt, "prompt", protocol.DefaultPrompt, "the text sent with the images")
	fs.StringVar(&o.imageDir, "image-dir", "", "use your own camera snapshots (JPEG/PNG) from `DIR` instead of the built-in pictures")
	fs.StringVar(&o.jsonOut, "json", "", "write the result document to `FILE` (importable with `vlmfleet results import`)")
	fs.StringVar(&o.csvOut, "csv", "", "write one line per combination to `FILE`")
	fs.StringVar(&o.device, "device", "", "device display name (default: detected)")
	fs.StringVar(&o.engineName, "engine-name", "external", "engine display name, e.g. vLLM or llama.cpp")
	fs.StringVar(&o.quant, "quantization", "", "number format of the model, e.g. BF16, FP8, Q4_K_M")
	fs.Float64Var(&o.params, "params", 0, "model parameters in billions, vision encoder included")
	fs.StringVar(&o.modelName, "model-name", "", "model display name (default: --model)")
	if err := parseFlags(fs, args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, usageError{fmt.Errorf("unexpected arguments %q", fs.Args())}
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })

	u, err := url.Parse(o.url)
	switch {
	case o.url == "":
		return nil, usageError{errors.New("--url is required, e.g. --url http://127.0.0.1:8000/v1")}
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return nil, usageError{fmt.Errorf("--url %q: want http(s)://HOST:PORT/v1", o.url)}
	case strings.TrimSpace(o.model) == "":
		return nil, usageError{errors.New("--model is required: the model name the endpoint serves")}
	}
	if o.sizes, err = parseSizes("--sizes", *sizes); err != nil {
		return nil, err
	}
	o.multiSizes = o.sizes
	if set["multi-sizes"] {
		if o.multiSizes, err = parseSizes("--multi-sizes", *multiSizes); err != nil {
			return nil, err
		}
	}
	if o.cameras, err = parseInts("--cameras", *cameras, 1, protocol.MaxCameraLevel); err != nil {
		return nil, err
	}
	if o.images, err = parseInts("--images", *images, 1, protocol.MaxImagesInRequest); err != nil {
		return nil, err
	}
	switch *cache {
	case "unset", "":
	case "true", "false":
		v := *cache == "true"
		o.cachePrompt = &v
	default:
		return nil, usageError{fmt.Errorf("--cache-prompt %q: want true, false or unset", *cache)}
	}
	switch {
	case o.target <= 0 || math.IsNaN(o.target) || math.IsInf(o.target, 0):
		return nil, usageError{fmt.Errorf("--target %g: want a positive number of seconds", o.target)}
	case o.timeout < 0:
		return nil, usageError{fmt.Errorf("--timeout %s: want 0 (no bound) or more", o.timeout)}
	case o.params < 0 || math.IsNaN(o.params):
		return nil, usageError{fmt.Errorf("--params %g: want billions of parameters, 0 or more", o.params)}
	}
	if o.apiKey == "" {
		o.apiKey = c.getenv("VLMFLEET_API_KEY")
	}
	if o.modelName == "" {
		o.modelName = o.model
	}
	if err := o.workload().Validate(); err != nil {
		return nil, usageError{err}
	}
	return o, nil
}

func parseSizes(flagName, v string) ([]string, error) {
	var out []string
	for _, s := range splitList(v) {
		sz, err := protocol.LookupImageSize(s)
		if err != nil {
			return nil, usageError{fmt.Errorf("%s: %w", flagName, err)}
		}
		for _, have := range out {
			if have == sz.Name {
				return nil, usageError{fmt.Errorf("%s: %s is listed twice", flagName, sz.Name)}
			}
		}
		out = append(out, sz.Name)
	}
	if len(out) == 0 {
		return nil, usageError{fmt.Errorf("%s: at least one size is needed (480p, 720p, 1080p, 2K)", flagName)}
	}
	return out, nil
}

func parseInts(flagName, v string, lo, hi int) ([]int, error) {
	var out []int
	seen := map[int]bool{}
	for _, s := range splitList(v) {
		n, err := strconv.Atoi(s)
		if err != nil || n < lo || n > hi {
			return nil, usageError{fmt.Errorf("%s: %q is not a whole number in %d..%d", flagName, s, lo, hi)}
		}
		if seen[n] {
			return nil, usageError{fmt.Errorf("%s: %d is listed twice", flagName, n)}
		}
		seen[n] = true
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, usageError{fmt.Errorf("%s: at least one number is needed", flagName)}
	}
	return out, nil
}

func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func (o *benchOptions) workload() protocol.Workload {
	set := "builtin"
	if o.imageDir != "" {
		set = o.imageDir
	}
	return protocol.Workload{
		Prompt:             o.prompt,
		MaxTokens:          o.maxTokens,
		Sizes:              o.sizes,
		Cameras:            o.cameras,
		RequestsPerLevel:   o.requests,
		MultiImageSizes:    o.multiSizes,
		ImagesPerRequest:   o.images,
		MultiImageRequests: o.multiRequests,
		WarmupRequests:     o.warmup,
		UniqueImages:       o.unique,
		RequestTimeoutSec:  o.timeout.Seconds(),
		CachePrompt:        o.cachePrompt,
		ImageSet:           set,
	}
}

func cmdBench(ctx context.Context, c *cli, args []string) error {
	o, err := parseBenchFlags(c, args)
	if err != nil {
		return err
	}
	w := o.workload()
	var imgs *imageset.Set
	if o.imageDir != "" {
		imgs, err = imageset.FromDir(o.imageDir)
	} else {
		imgs, err = imageset.Builtin()
	}
	if err != nil {
		return fmt.Errorf("loading the pictures: %w", err)
	}

	// The tools are looked up on the CLI's PATH, not the process's: an empty
	// one finds nothing rather than falling back to os.Getenv.
	path := c.getenv("PATH")
	if path == "" {
		path = string(os.PathListSeparator)
	}
	facts := devicefacts.Detect(ctx, devicefacts.Options{SysRoot: c.getenv("VLMFLEET_SYSROOT"), Path: path})
	if o.device != "" {
		facts.Name = o.device
	} else if u, err := url.Parse(o.url); err == nil && !isLoopbackHost(u.Hostname()) {
		c.log.Warn().Str("host", u.Hostname()).
			Msg("the device facts describe this machine, not the endpoint's; name the endpoint's device with --device")
	}
	if facts.Name == "" {
		facts.Name = "unknown device"
	}
	run := protocol.Run{
		Schema: protocol.SchemaVersion,
		ID:     newRunID(),
		Source: protocol.SourceBench,
		Config: protocol.Configuration{
			Model: o.modelName, ParamsB: o.params, Quantization: o.quant,
			Engine: o.engineName, Device: facts.Name,
		},
		Workload:  w,
		Status:    protocol.RunRunning,
		CreatedAt: time.Now().UTC(),
		Engine:    protocol.EngineInfo{Kind: "external", Name: o.engineName, Endpoint: o.url, Model: o.model},
		Device:    facts,
		Client:    loadgen.ClientInfo(imgs, c.version),
	}
	// A simulated engine (vlmfleet sim) runs speedup times faster than the
	// device it stands for: its times are scaled back and the run labelled,
	// never published as a real device's.
	simulated, speedup, simDevice := probeSimulated(ctx, c, o)
	if simulated {
		if o.device == "" && simDevice != "" {
			// Filed under the device it simulates, never under this machine.
			run.Device = devicefacts.Simulated(simDevice)
			run.Config.Device = run.Device.Name
		}
		run.Simulated, run.SimSpeedup = true, speedup
		run.Engine.Props = map[string]string{"simulated": "true", "sim_speedup": strconv.FormatFloat(speedup, 'g', -1, 64)}
		c.log.Warn().Float64("sim_speedup", speedup).Msg("the endpoint is a simulated engine; its times are scaled back and the run is labelled simulated")
	}
	// scale is what the progress line multiplies live TTFTs by, so that they
	// read on the same scale as the summary.
	scale := 1.0
	if simulated && speedup > 1 {
		scale = speedup
	}
	run.StartedAt = run.CreatedAt
	plan := w.Plan()
	c.log.Info().Str("url", o.url).Str("model", o.model).Int("combinations", len(plan)).
		Str("images", run.Client.ImageSet).Msg("bench starting")

	bars := termprogress.New(c.stderr, c.tty)
	hooks := loadgen.Hooks{
		ComboStart: func(idx, n int, pc protocol.PlannedCombo, warmup bool) {
			label := fmt.Sprintf("[%d/%d] %s", idx+1, n, pc.ComboKey)
			if warmup {
				bars.Set(pc.ComboKey.String(), label, 0, 0, "warm-up")
				return
			}
			bars.Set(pc.ComboKey.String(), label, 0, pc.Requests, "")
		},
		Request: func(k protocol.ComboKey, rec protocol.RequestRecord, p loadgen.Progress) {
			suffix := "TTFT -"
			if p.Done > 0 {
				suffix = fmt.Sprintf("TTFT %.2f s", p.MeanTTFT*scale)
			}
			if p.Failed > 0 {
				suffix += fmt.Sprintf(", %d failed", p.Failed)
			}
			bars.Set(k.String(), labelFor(plan, k), p.Done+p.Failed, p.Total, suffix)
		},
		ComboDone: func(idx int, cb *protocol.Combination) error {
			bars.Finish(cb.ComboKey.String())
			return nil
		},
	}
	target := loadgen.Target{BaseURL: o.url, Model: o.model, APIKey: o.apiKey}
	if o.cachePrompt != nil {
		// llama.cpp's field; other servers may refuse unknown fields, so it
		// is sent only when asked for.
		target.ExtraBody = map[string]any{"cache_prompt": *o.cachePrompt}
	}
	combos, merr := loadgen.Measure(ctx, target, w, imgs, hooks)
	bars.Close()

	if simulated {
		for i := range combos {
			combos[i].ScaleTime(speedup)
		}
	}
	run.Combinations = combos
	run.FinishedAt = time.Now().UTC()
	run.Status = protocol.RunCompleted
	if merr != nil {
		run.Status, run.Error = protocol.RunFailed, merr.Error()
		if ctx.Err() != nil {
			run.Status = protocol.RunCancelled
		}
	}
	printBenchSummary(c.stdout, &run, o.target)
	if err := writeBenchFiles(o, &run); err != nil {
		return err
	}
	if merr != nil {
		return fmt.Errorf("measuring: %w", merr)
	}
	return nil
}

// modelsTimeout bounds the look at /models: an endpoint without one (or a
// slow one) must not hold up the measurement.
const modelsTimeout = 5 * time.Second

// probeSimulated reads the endpoint's model list and reports whether the
// served model is a simulated engine and its speedup (1: real time). Any
// failure means a real engine, as before the look: most servers list no
// such field.
func probeSimulated(ctx context.Context, c *cli, o *benchOptions) (simulated bool, speedup float64, device string) {
	ctx, cancel := context.WithTimeout(ctx, modelsTimeout)
	defer cancel()
	list, err := fetchModels(ctx, strings.TrimRight(o.url, "/")+"/models", o.apiKey)
	if err != nil {
		c.log.Debug().Err(err).Msg("no model list; taking the endpoint for a real engine")
		return false, 1, ""
	}
	simulated, speedup = list.simulated(o.model)
	if simulated {
		device = list.simDevice(o.model)
	}
	return simulated, speedup, device
}

// modelList is the part of an OpenAI-compatible GET /models answer bench
// reads; simulated and sim_speedup are vlmfleet sim's own fields.
type modelList struct {
	Data []struct {
		ID         string  `json:"id"`
		Simulated  bool    `json:"simulated"`
		SimSpeedup float64 `json:"sim_speedup"`
		SimDevice  string  `json:"sim_device"`
	} `json:"data"`
}

// simDevice is the device the simulated model stands for ("" if not said).
func (l modelList) simDevice(model string) string {
	for _, m := range l.Data {
		if m.ID == model || len(l.Data) == 1 {
			return m.SimDevice
		}
	}
	return ""
}

// maxModelsBody bounds the model list read: lists are a few kilobytes.
const maxModelsBody = 1 << 20

func fetchModels(ctx context.Context, u, apiKey string) (modelList, error) {
	var list modelList
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return list, fmt.Errorf("GET %s: %w", u, err)
	}
	if apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+apiKey)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return list, fmt.Errorf("GET %s: %w", u, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return list, fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	list, err = decodeModelList(io.LimitReader(resp.Body, maxModelsBody))
	if err != nil {
		return list, fmt.Errorf("GET %s: %w", u, err)
	}
	return list, nil
}

func decodeModelList(r io.Reader) (modelList, error) {
	var list modelList
	if err := json.NewDecoder(r).Decode(&list); err != nil {
		return list, fmt.Errorf("model list: %w", err)
	}
	return list, nil
}

// simulated reads the entry of the served model; the simulator answers to
// any name, so a list of one entry stands for the model whatever its id.
// A speedup that is missing or not a finite number of at least 1 counts as
// real time.
func (l modelList) simulated(model string) (bool, float64) {
	i := -1
	for j, m := range l.Data {
		if m.ID == model {
			i = j
			break
		}
	}
	if i < 0 && len(l.Data) == 1 {
		i = 0
	}
	if i < 0 || !l.Data[i].Simulated {
		return false, 1
	}
	sp := l.Data[i].SimSpeedup
	if !(sp >= 1) || math.IsInf(sp, 0) {
		sp = 1
	}
	return true, sp
}

// isLoopbackHost reports whether host names this machine.
func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// labelFor is the progress label of a combination: its place in the plan and its key.
func labelFor(plan []protocol.PlannedCombo, k protocol.ComboKey) string {
	for i, pc := range plan {
		if pc.ComboKey == k {
			return fmt.Sprintf("[%d/%d] %s", i+1, len(plan), k)
		}
	}
	return k.String()
}

func newRunID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// benchPoints turns the run into the explorer's points, so that bench and
// the explorer compute Max Cameras with one rule.
func benchPoints(run *protocol.Run) []explorer.Point {
	ds := explorer.Aggregate([]protocol.Run{*run}, time.Now())
	for _, r := range ds.Rows {
		if r.Run.ID == run.ID {
			return r.Points
		}
	}
	return nil
}

func printBenchSummary(w io.Writer, run *protocol.Run, target float64) {
	fmt.Fprintf(w, "\n%s on %s (%s), %s", run.Config.Model, run.Config.Device, run.Engine.Endpoint, run.Status)
	if run.Simulated {
		fmt.Fprintf(w, ", SIMULATED engine (%gx real time; times scaled back)", max(run.SimSpeedup, 1))
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "%-6s %4s %4s %5s %6s %10s %10s %8s %10s\n", "Size", "Imgs", "Cams", "Done", "Failed", "TTFT mean", "TTFT p90", "TPS", "Out tok/s")
	for _, cb := range run.Combinations {
		if cb.Completed == 0 {
			fmt.Fprintf(w, "%-6s %4d %4d %5d %6d %10s %10s %8s %10s\n", cb.Size, cb.Images, cb.Cameras,
				cb.Completed, cb.Failed, "-", "-", "-", "-")
		} else {
			fmt.Fprintf(w, "%-6s %4d %4d %5d %6d %9.3fs %9.3fs %8.1f %10.1f\n", cb.Size, cb.Images, cb.Cameras,
				cb.Completed, cb.Failed, cb.TTFT.Mean, cb.TTFT.P90, cb.TPS.Mean, cb.OutputTokensPerSec)
		}
		for _, e := range cb.Errors {
			fmt.Fprintf(w, "         %dx %s\n", e.Count, e.Error)
		}
	}
	fmt.Fprintf(w, "\nMax Cameras at target %g s (mean TTFT, one image per request):\n", target)
	var sizes []string
	for _, s := range protocol.ImageSizes() {
		sizes = append(sizes, s.Name)
	}
	points := benchPoints(run)
	for _, s := range sizes {
		if !explorer.Measured(points, s, 1) {
			continue
		}
		fmt.Fprintf(w, "  %-6s %s\n", s, explorer.MaxCamerasLabel(explorer.MaxCameras(points, s, 1, target)))
	}
}

func writeBenchFiles(o *benchOptions, run *protocol.Run) error {
	if o.jsonOut != "" {
		b, err := json.MarshalIndent(run, "", "  ")
		if err != nil {
			return fmt.Errorf("encoding the result document: %w", err)
		}
		if err := os.WriteFile(o.jsonOut, append(b, '\n'), 0o644); err != nil {
			return fmt.Errorf("writing --json: %w", err)
		}
	}
	if o.csvOut != "" {
		f, err := os.Create(o.csvOut)
		if err != nil {
			return fmt.Errorf("writing --csv: %w", err)
		}
		if err := writeBenchCSV(f, run); err != nil {
			f.Close()
			return fmt.Errorf("writing --csv %s: %w", o.csvOut, err)
		}
		if err := f.Close(); err != nil {
			return fmt.Errorf("writing --csv %s: %w", o.csvOut, err)
		}
	}
	return nil
}

func writeBenchCSV(w io.Writer, run *protocol.Run) error {
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"model", "engine", "device", "size", "width", "height", "images", "cameras",
		"completed", "failed", "ttft_mean", "ttft_p50", "ttft_p90", "ttft_p99", "ttft_min", "ttft_max",
		"tps_mean", "tps_p50", "e2e_mean", "e2e_p90", "itl_mean", "ttfb_mean", "role_chunk_mean",
		"prompt_tokens_mean", "completion_tokens_mean", "output_tokens_per_sec", "max_in_flight", "wall_sec",
		"warmup", "errors"})
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	for _, cb := range run.Combinations {
		var errs []string
		for _, e := range cb.Errors {
			errs = append(errs, fmt.Sprintf("%dx %s", e.Count, e.Error))
		}
		_ = cw.Write([]string{run.Config.Model, run.Config.Engine, run.Config.Device, cb.Size,
			strconv.Itoa(cb.Width), strconv.Itoa(cb.Height), strconv.Itoa(cb.Images), strconv.Itoa(cb.Cameras),
			strconv.Itoa(cb.Completed), strconv.Itoa(cb.Failed),
			f(cb.TTFT.Mean), f(cb.TTFT.P50), f(cb.TTFT.P90), f(cb.TTFT.P99), f(cb.TTFT.Min), f(cb.TTFT.Max),
			f(cb.TPS.Mean), f(cb.TPS.P50), f(cb.E2E.Mean), f(cb.E2E.P90), f(cb.ITL.Mean), f(cb.TTFB.Mean),
			f(cb.RoleChunk.Mean), f(cb.PromptTokens.Mean), f(cb.CompletionTokens.Mean), f(cb.OutputTokensPerSec),
			strconv.Itoa(cb.MaxInFlight), f(cb.WallSec), strconv.Itoa(cb.Warmup), strings.Join(errs, "; ")})
	}
	cw.Flush()
	return cw.Error()
}
