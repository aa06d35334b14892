package main

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// workloadFlags are the flags that shape a protocol.Workload, shared by
// bench and sweep so that both read them with the same rules.
type workloadFlags struct {
	sizes, cameras, multiSizes, images, prompt, cachePrompt *string
	frameInterval, load                                     *string
	requests, multiRequests, warmup, maxTokens              *int
	unique                                                  *optionalBool
	timeout                                                 *time.Duration
	search                                                  *searchFlag
	statistic                                               *string
	target                                                  *float64
	profile                                                 *profileFlags
}

// addWorkloadFlags defines the flags on fs. The defaults shown in -h are
// the seed method's (protocol.DefaultWorkload); apply changes only what
// was given, so the workload it starts from decides the rest.
func addWorkloadFlags(fs *flag.FlagSet) *workloadFlags {
	d := protocol.DefaultWorkload()
	cache := "unset"
	if d.CachePrompt != nil {
		cache = strconv.FormatBool(*d.CachePrompt)
	}
	f := &workloadFlags{
		sizes:         fs.String("sizes", strings.Join(d.Sizes, ","), "image sizes measured at every camera level, one image per request (480p, 720p, 1080p, 2K)"),
		cameras:       fs.String("cameras", protocol.JoinInts(d.Cameras), "camera levels: concurrent closed-loop clients"),
		requests:      fs.Int("requests", d.RequestsPerLevel, "measured requests per camera level"),
		multiSizes:    fs.String("multi-sizes", strings.Join(d.MultiImageSizes, ","), "image sizes measured with one camera and several images per request ('none' to skip that family)"),
		images:        fs.String("images", protocol.JoinInts(d.ImagesPerRequest), "images per request of the one-camera family"),
		multiRequests: fs.Int("multi-requests", d.MultiImageRequests, "measured requests per one-camera multi-image combination"),
		warmup:        fs.Int("warmup", d.WarmupRequests, "discarded warm-up requests per camera before each combination"),
		maxTokens:     fs.Int("max-tokens", d.MaxTokens, "max_tokens of every request"),
		prompt:        fs.String("prompt", d.Prompt, "the text sent with the images"),
		unique:        newOptionalBool(fs, "unique-images", "perturb pixels per request so that no engine cache can help: true, false or unset (the default: true only for an engine with no cache switch vlmfleet sets, such as Ollama)"),
		timeout:       fs.Duration("timeout", time.Duration(d.RequestTimeoutSec*float64(time.Second)), "bound on one request (0: none)"),
		cachePrompt:   fs.String("cache-prompt", cache, "send llama.cpp's cache_prompt: true, false or unset (not sent)"),
		frameInterval: fs.String("frame-interval", "", "also measure every camera level with each camera sending one frame every `SECONDS` (a list, e.g. 5,10), dropping the frames that fall due while its previous answer runs (default: back to back only)"),
		load:          fs.String("load", "", "how back-to-back levels are measured: burst (one synchronized round per level, as published) or sustained (cameras that keep sending, measured in a window once they have drifted apart); default: the ladder as published and the search sustained"),
		search:        &searchFlag{},
		statistic:     fs.String("statistic", protocol.StatisticMean, "judge a level by its mean TTFT (as published: failed requests left out), p90 or p95 (a failed request counted as an answer that never started)"),
		target:        fs.Float64("target", protocol.DefaultTargetSec, "response-time target in `SECONDS` a level is judged by (Max Cameras, search)"),
		profile:       addProfileFlags(fs),
	}
	fs.Var(f.search, "search", fmt.Sprintf("after each ladder, search for the exact Max Cameras up to a ceiling: --search alone for %d cameras, --search=N for N", protocol.DefaultSearchCeiling))
	return f
}

// searchFlag is --search: alone, the default ceiling; --search=N, N
// cameras (0: the ladder only). A value that is neither is kept and
// refused by apply: the flag package would call it an invalid boolean.
type searchFlag struct {
	ceiling int
	bad     string
}

func (f *searchFlag) String() string {
	if f == nil {
		return "0"
	}
	return strconv.Itoa(f.ceiling)
}

// IsBoolFlag lets --search stand alone, as a switch.
func (f *searchFlag) IsBoolFlag() bool { return true }

func (f *searchFlag) Set(v string) error {
	f.bad = ""
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "true":
		f.ceiling = protocol.DefaultSearchCeiling
		return nil
	case "false":
		f.ceiling = 0
		return nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 0 || n > protocol.MaxCameraLevel {
		f.bad = v
		return nil
	}
	f.ceiling = n
	return nil
}

// check refuses a value Set kept.
func (f *searchFlag) check() error {
	if f.bad == "" {
		return nil
	}
	return fmt.Errorf("--search=%.40q: want --search alone (a ceiling of %d cameras) or --search=N, N up to %d (0: no search)",
		f.bad, protocol.DefaultSearchCeiling, protocol.MaxCameraLevel)
}

// searchArgHint explains a number left over after --search: a switch
// takes no separate value, so "--search 40" leaves 40 as an argument.
func searchArgHint(fs *flag.FlagSet) string {
	given := false
	fs.Visit(func(fl *flag.Flag) { given = given || fl.Name == "search" })
	if _, err := strconv.Atoi(fs.Arg(0)); given && err == nil {
		return fmt.Sprintf(" (a search's ceiling is written --search=%s)", fs.Arg(0))
	}
	return ""
}

// workloadFlagOrder is the order apply sets fields in: --images after
// --multi-sizes, so "--multi-sizes none" does not undo it.
var workloadFlagOrder = []string{"sizes", "cameras", "requests", "multi-sizes", "images", "multi-requests",
	"warmup", "max-tokens", "prompt", "unique-images", "timeout", "cache-prompt", "frame-interval", "load", "search", "statistic", "target"}

// apply overrides the fields of w whose flags were given on the command
// line, checking every value; its errors name the flag.
func (f *workloadFlags) apply(fs *flag.FlagSet, w *protocol.Workload) error {
	given := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { given[fl.Name] = true })
	for _, name := range workloadFlagOrder {
		if !given[name] {
			continue
		}
		if err := f.set(name, w); err != nil {
			return usageError{err}
		}
	}
	if err := f.profile.apply(given, w); err != nil {
		return usageError{err}
	}
	return nil
}

func (f *workloadFlags) set(name string, w *protocol.Workload) error {
	var err error
	switch name {
	case "sizes":
		w.Sizes, err = listFlag(name, protocol.ParseSizeList, *f.sizes)
	case "cameras":
		w.Cameras, err = listFlag(name, intList(1, protocol.MaxCameraLevel), *f.cameras)
	case "requests":
		w.RequestsPerLevel, err = checkInt(name, *f.requests, 1, protocol.MaxRequestsPerComb)
	case "multi-sizes":
		if strings.TrimSpace(*f.multiSizes) == "none" {
			w.MultiImageSizes, w.ImagesPerRequest = nil, nil
			return nil
		}
		w.MultiImageSizes, err = listFlag(name, protocol.ParseSizeList, *f.multiSizes)
	case "images":
		w.ImagesPerRequest, err = listFlag(name, intList(1, protocol.MaxImagesInRequest), *f.images)
	case "multi-requests":
		w.MultiImageRequests, err = checkInt(name, *f.multiRequests, 1, protocol.MaxRequestsPerComb)
	case "warmup":
		w.WarmupRequests, err = checkInt(name, *f.warmup, 0, 100)
	case "max-tokens":
		w.MaxTokens, err = checkInt(name, *f.maxTokens, 1, protocol.MaxTokensLimit)
	case "prompt":
		if strings.TrimSpace(*f.prompt) == "" {
			return errors.New("--prompt: must not be empty")
		}
		w.Prompt = *f.prompt
	case "unique-images":
		w.UniqueImages = f.unique.v
	case "timeout":
		if *f.timeout < 0 {
			return fmt.Errorf("--timeout %s: want 0 (no bound) or more", *f.timeout)
		}
		w.RequestTimeoutSec = f.timeout.Seconds()
	case "cache-prompt":
		switch v := *f.cachePrompt; v {
		case "unset", "":
			w.CachePrompt = nil
		case "true", "false":
			b := v == "true"
			w.CachePrompt = &b
		default:
			return fmt.Errorf("--cache-prompt %q: want true, false or unset", v)
		}
	case "frame-interval":
		w.FrameIntervalSec, err = listFlag(name, frameIntervals, *f.frameInterval)
	case "load":
		w.Load, err = listFlag(name, protocol.ParseLoad, strings.TrimSpace(*f.load))
	default:
		return f.setJudgement(name, w)
	}
	return err
}

// frameIntervals reads frame intervals in seconds, each once; "none" (or
// nothing) is back to back only.
func frameIntervals(v string) ([]float64, error) {
	if s := strings.TrimSpace(v); s == "" || s == "none" {
		return nil, nil
	}
	var out []float64
	for _, s := range protocol.SplitList(v) {
		t, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(t) || math.IsInf(t, 0) || t <= 0 || t > protocol.MaxFrameIntervalSec {
			return nil, fmt.Errorf("%q is not a number of seconds above 0 and up to %d", s, protocol.MaxFrameIntervalSec)
		}
		if slices.Contains(out, t) {
			return nil, fmt.Errorf("%g s is listed twice", t)
		}
		out = append(out, t)
	}
	return out, nil
}

// setJudgement sets the search and how a level is judged. The published
// judgement (the mean, 3 s) is kept as the zero one, so that a workload
// naming it reads, and is recorded, as one that does not.
func (f *workloadFlags) setJudgement(name string, w *protocol.Workload) error {
	switch name {
	case "search":
		if err := f.search.check(); err != nil {
			return err
		}
		w.Search = f.search.ceiling
	case "statistic":
		s, err := protocol.ParseStatistic(*f.statistic)
		if err != nil {
			return fmt.Errorf("--statistic: %w", err)
		}
		w.Judgement.Statistic = s
		if s == protocol.StatisticMean {
			w.Judgement.Statistic = ""
		}
	case "target":
		if t := *f.target; !(t > 0 && t <= protocol.MaxTargetSec) {
			return fmt.Errorf("--target %g: want a positive number of seconds up to %d", t, protocol.MaxTargetSec)
		}
		w.Judgement.TargetSec = *f.target
		if *f.target == protocol.DefaultTargetSec {
			w.Judgement.TargetSec = 0
		}
	}
	return nil
}

// fieldFlags maps a field, as protocol.Workload.Validate and
// sweepfile.Check name it, to the flag that sets it.
var fieldFlags = map[string]string{
	"name": "name", "agents": "agents", "deployments": "deployments",
	"power_modes": "power-modes", "power_limits_w": "power-limits",
	"workload.sizes": "sizes", "workload.cameras": "cameras", "workload.requests_per_level": "requests",
	"workload.multi_image_sizes": "multi-sizes", "workload.images_per_request": "images",
	"workload.multi_image_requests": "multi-requests", "workload.warmup_requests": "warmup",
	"workload.max_tokens": "max-tokens", "workload.prompt": "prompt", "workload.request_timeout_sec": "timeout",
	"workload.frame_interval_sec": "frame-interval", "workload.load": "load",
	"workload.search": "search", "workload.judgement.statistic": "statistic", "workload.judgement.target_sec": "target",
	"workload.profile.lengths": "isl", "workload.profile.lengths.isl": "isl", "workload.profile.lengths.osl": "osl",
	"workload.profile.resolutions": "image-size", "workload.profile.image_format": "image-format",
	"workload.profile.images_per_request": "profile-images", "workload.profile.concurrency": "concurrency",
	"workload.profile.auto_ceiling": "auto-ceiling", "workload.profile.extra_body": "extra-body",
	"workload.profile.requests_per_level": "profile-requests", "workload.profile.warmup_requests": "warmup",
}

// pointAtFlag names the flag behind a validation error: the one
// given that caused it, or the one that would fix a value from elsewhere
// (a sweep file, the defaults).
func pointAtFlag(fs *flag.FlagSet, err error) error {
	msg := err.Error()
	field, _, _ := strings.Cut(msg, ":")
	name, ok := fieldFlags[withoutIndices(field)]
	if !ok || fs.Lookup(name) == nil {
		return err
	}
	given := false
	fs.Visit(func(fl *flag.Flag) { given = given || fl.Name == name })
	if given {
		return fmt.Errorf("--%s: %w", name, err)
	}
	return fmt.Errorf("%w (--%s sets it)", err, name)
}

// withoutIndices: workload.profile.lengths[1].osl → workload.profile.lengths.osl.
func withoutIndices(field string) string {
	var b strings.Builder
	for {
		before, rest, ok := strings.Cut(field, "[")
		b.WriteString(before)
		if !ok {
			return b.String()
		}
		_, field, _ = strings.Cut(rest, "]")
	}
}

func checkInt(name string, v, lo, hi int) (int, error) {
	switch {
	case v < lo:
		return 0, fmt.Errorf("--%s %d: want %d or more", name, v, lo)
	case v > hi:
		return 0, fmt.Errorf("--%s %d: want at most %d", name, v, hi)
	}
	return v, nil
}

// listFlag reads a list flag's value with parse, naming the flag in errors.
func listFlag[T any](name string, parse func(string) (T, error), v string) (T, error) {
	out, err := parse(v)
	if err != nil {
		return out, fmt.Errorf("--%s: %w", name, err)
	}
	return out, nil
}

func intList(lo, hi int) func(string) ([]int, error) {
	return func(v string) ([]int, error) { return protocol.ParseIntList(v, lo, hi) }
}

// optionalBool is a switch that may be left unset: "--unique-images" alone
// is true, "=false" false, and "=unset" (the default) leaves the choice to
// the run.
type optionalBool struct{ v *bool }

func newOptionalBool(fs *flag.FlagSet, name, usage string) *optionalBool {
	b := &optionalBool{}
	fs.Var(b, name, usage)
	return b
}

func (b *optionalBool) IsBoolFlag() bool { return true }

func (b *optionalBool) String() string {
	if b == nil || b.v == nil {
		return "unset"
	}
	return strconv.FormatBool(*b.v)
}

func (b *optionalBool) Set(s string) error {
	if s == "unset" {
		b.v = nil
		return nil
	}
	v, err := strconv.ParseBool(s)
	if err != nil {
		return fmt.Errorf("want true, false or unset")
	}
	b.v = &v
	return nil
}
