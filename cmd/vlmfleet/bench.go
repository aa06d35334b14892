package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/url"
	"slices"
	"strings"

	"github.com/vlmfleet/vlmfleet/agent/engine"
	"github.com/vlmfleet/vlmfleet/agent/imageset"
	"github.com/vlmfleet/vlmfleet/agent/measure"
	"github.com/vlmfleet/vlmfleet/agent/telemetry"
	"github.com/vlmfleet/vlmfleet/cmd/vlmfleet/internal/termprogress"
	"github.com/vlmfleet/vlmfleet/explorer"
	"github.com/vlmfleet/vlmfleet/internal/atomicfile"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// benchOptions are the flags of `vlmfleet bench`.
type benchOptions struct {
	url, model, apiKey        string
	workload                  protocol.Workload
	imageDir                  string
	jsonOut, csvOut           string
	device, engineName, quant string
	modelName, telemetry      string
	params                    float64
}

func parseBenchFlags(c *cli, args []string) (*benchOptions, error) {
	fs := newFlagSet(c, "bench")
	o := &benchOptions{workload: protocol.DefaultWorkload()}
	fs.StringVar(&o.url, "url", "", "endpoint base URL ending in /v1, e.g. http://127.0.0.1:8000/v1; a full path (…/v1/chat/completions) is cut to its base (required)")
	fs.StringVar(&o.model, "model", "", "model name the endpoint serves (required)")
	fs.StringVar(&o.apiKey, "api-key", "", "Bearer token (default $VLMFLEET_API_KEY)")
	wf := addWorkloadFlags(fs)
	fs.StringVar(&o.imageDir, "image-dir", "", "use your own camera snapshots (JPEG/PNG) from `DIR` instead of the built-in pictures")
	fs.StringVar(&o.jsonOut, "json", "", "write the result document to `FILE` (importable with `vlmfleet results import`)")
	fs.StringVar(&o.csvOut, "csv", "", "write one line per combination to `FILE`")
	fs.StringVar(&o.device, "device", "", "device display name (default: detected)")
	fs.StringVar(&o.engineName, "engine-name", "", "engine display name, e.g. vLLM or llama.cpp (default: what the endpoint says, else external)")
	fs.StringVar(&o.telemetry, "telemetry", "", "sample this machine's hardware: auto, tegrastats, nvidia-smi, host or off (default: auto for a loopback endpoint, else off)")
	fs.StringVar(&o.quant, "quantization", "", "number format of the model, e.g. BF16, FP8, Q4_K_M")
	fs.Float64Var(&o.params, "params", 0, "model parameters in billions, vision encoder included")
	fs.StringVar(&o.modelName, "model-name", "", "model display name (default: --model)")
	if err := parseFlags(fs, args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, usageError{fmt.Errorf("unexpected arguments %q%s", fs.Args(), searchArgHint(fs))}
	}
	u, err := url.Parse(o.url)
	switch {
	case o.url == "":
		return nil, usageError{errors.New("--url is required, e.g. --url http://127.0.0.1:8000/v1")}
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return nil, usageError{fmt.Errorf("--url %q: want http(s)://HOST:PORT/v1", o.url)}
	case strings.TrimSpace(o.model) == "":
		return nil, usageError{errors.New("--model is required: the model name the endpoint serves")}
	case o.params < 0 || math.IsNaN(o.params):
		return nil, usageError{fmt.Errorf("--params %g: want billions of parameters, 0 or more", o.params)}
	case o.telemetry != "" && !slices.Contains(telemetry.Sources(), o.telemetry):
		return nil, usageError{fmt.Errorf("--telemetry %q: want one of %s", o.telemetry, strings.Join(telemetry.Sources(), ", "))}
	}
	if err := wf.apply(fs, &o.workload); err != nil {
		return nil, err
	}
	if o.imageDir != "" {
		o.workload.ImageSet = o.imageDir
	}
	if err := o.workload.Validate(); err != nil {
		return nil, usageError{pointAtFlag(fs, err)}
	}
	if o.apiKey == "" {
		o.apiKey = c.getenv("VLMFLEET_API_KEY")
	}
	if base, cut := engine.BaseURL(o.url); cut {
		// A URL copied with its API path names the API all the same.
		c.log.Debug().Str("url", o.url).Str("base_url", base).Msg("--url names an API path; measuring the API at its base URL")
		o.url = base
	}
	if o.modelName == "" {
		o.modelName = o.model
	}
	return o, nil
}

func cmdBench(ctx context.Context, c *cli, args []string) error {
	o, err := parseBenchFlags(c, args)
	if err != nil {
		return err
	}
	spec, err := benchSpec(ctx, c, o)
	if err != nil {
		return err
	}
	plan := spec.Run.Workload.Plan()
	c.log.Info().Str("url", o.url).Str("model", o.model).Int("combinations", len(plan)).
		Str("images", spec.Images.Name()).Msg("bench starting")
	bars := termprogress.New(c.stderr, c.tty)
	run, merr := measure.Run(ctx, spec, measure.Hooks{
		Running: func(h protocol.Run) error {
			if h.Simulated {
				c.log.Warn().Float64("sim_speedup", max(h.SimSpeedup, 1)).Str("device", h.Config.Device).
					Msg("the endpoint is a simulated engine; its times are scaled back and the run is labelled simulated")
			}
			return nil
		},
		Progress: func(p protocol.Progress) { bars.Progress("bench", "", p) },
	})
	bars.Close()
	if o.workload.Profile != nil {
		writeProfileSummary(c.stdout, &run)
	} else {
		explorer.WriteRunSummary(c.stdout, &run, o.workload.Judgement)
	}
	if err := writeBenchFiles(o, &run); err != nil {
		return err
	}
	if merr != nil {
		return fmt.Errorf("measuring: %w", merr)
	}
	return allFailed(&run)
}

// allFailed is an error when every request of some combination failed: a
// run that measured nothing there must not end as if it had.
func allFailed(run *protocol.Run) error {
	var keys []string
	var first string
	for _, c := range run.Combinations {
		if c.Completed == 0 && c.Failed > 0 {
			keys = append(keys, c.ComboKey.String())
			if first == "" && len(c.Errors) > 0 {
				first = c.Errors[0].Error
			}
		}
	}
	switch len(keys) {
	case 0:
		return nil
	case 1:
		return fmt.Errorf("every request of %s failed (%s)", keys[0], first)
	}
	return fmt.Errorf("every request of %d combinations failed (%s; first: %s)", len(keys), strings.Join(keys, ", "), first)
}

// benchSpec is the measurement of the endpoint the flags name, as a lab
// job would make it: the same path measures both.
func benchSpec(ctx context.Context, c *cli, o *benchOptions) (measure.Spec, error) {
	// The tools are looked up on the CLI's PATH, not the process's.
	e := measure.Endpoint{URL: o.url, Model: o.model, APIKey: o.apiKey, ImageDir: o.imageDir, Telemetry: o.telemetry,
		SysRoot: c.getenv("VLMFLEET_SYSROOT"), Path: c.getenv("PATH"), PictureCache: imageset.CacheDir(c.getenv)}
	if o.device == "" && !e.Loopback() {
		c.log.Warn().Str("url", o.url).
			Msg("the device facts describe this machine, not the endpoint's; name the endpoint's device with --device")
	}
	spec, err := measure.EndpointSpec(ctx, e, protocol.Run{Source: protocol.SourceBench, Workload: o.workload,
		Config: protocol.Configuration{Model: o.modelName, ParamsB: o.params, Quantization: o.quant}}, c.log)
	spec.DeviceName, spec.EngineName, spec.Version = o.device, o.engineName, c.version
	return spec, err
}

// writeBenchFiles writes --json and --csv, each whole or not at all.
func writeBenchFiles(o *benchOptions, run *protocol.Run) error {
	if o.jsonOut != "" {
		if _, err := atomicfile.Write(o.jsonOut, 0o644, func(w io.Writer) error { return protocol.EncodeRun(w, run) }); err != nil {
			return fmt.Errorf("--json: %w", err)
		}
	}
	if o.csvOut != "" {
		if _, err := atomicfile.Write(o.csvOut, 0o644, func(w io.Writer) error { return explorer.WriteRunCSV(w, run) }); err != nil {
			return fmt.Errorf("--csv: %w", err)
		}
	}
	return nil
}
