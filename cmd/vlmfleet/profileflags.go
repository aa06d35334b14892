package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// profileFlags shape a protocol.ProfileWorkload: any of them given makes
// the workload a latency and throughput profile (docs/profiles.md).
type profileFlags struct {
	isl, osl, imageSize, imageFormat, concurrency, extraBody *string
	autoCeiling, requests, images                            *int
	noStream                                                 *bool
}

// profileFlagNames are the flags that make a workload a profile, in the
// order apply sets them.
var profileFlagNames = []string{"isl", "osl", "image-size", "image-format", "profile-images", "concurrency",
	"auto-ceiling", "no-stream", "extra-body", "profile-requests"}

// cameraOnlyFlags are the flags of the camera ladders, which a profile
// does not measure; each with the profile's flag in its place, if any.
var cameraOnlyFlags = map[string]string{
	"sizes": "--image-size", "cameras": "--concurrency", "requests": "--profile-requests", "multi-sizes": "--image-size",
	"images": "--profile-images", "multi-requests": "--profile-requests", "max-tokens": "--osl",
	"frame-interval": "", "load": "", "search": "--concurrency auto", "statistic": "", "target": "",
}

func addProfileFlags(fs *flag.FlagSet) *profileFlags {
	d := protocol.DefaultProfile()
	return &profileFlags{
		isl: fs.String("isl", protocol.JoinInts([]int{d.Lengths[0].ISL}),
			"profile: text input lengths in the server's tokens, the image's not counted (a list, paired with --osl by position; 0: send --prompt as written)"),
		osl: fs.String("osl", protocol.JoinInts([]int{d.Lengths[0].OSL}),
			"profile: forced output lengths in tokens (a list paired with --isl by position; one value: the same for every ISL)"),
		imageSize: fs.String("image-size", d.Resolutions[0].String(),
			"profile: image sizes `WxH` in pixels, each side up to 8192 (a list); --sizes names the camera ladders' sizes instead"),
		imageFormat: fs.String("image-format", d.ImageFormat, "profile: image encoding, png or jpeg"),
		images:      fs.Int("profile-images", d.ImagesPerRequest, "profile: images per request (0: text only)"),
		concurrency: fs.String("concurrency", "auto", "profile: concurrency levels (a list, e.g. 1,2,4) or auto: "+protocol.ProfileAutoRule),
		autoCeiling: fs.Int("auto-ceiling", d.AutoCeiling, "profile: the highest level --concurrency auto measures"),
		noStream:    fs.Bool("no-stream", false, "profile: send without streaming (request latency and throughput only; no TTFT or ITL)"),
		extraBody: fs.String("extra-body", "",
			"profile: a JSON object merged into every request's body, or @FILE holding one; it may not set "+strings.Join(protocol.ProfileOwnedFields, ", ")),
		requests: fs.Int("profile-requests", d.RequestsPerLevel,
			fmt.Sprintf("profile: measured requests per level (0: max(%d, 2 × concurrency))", protocol.DefaultProfileMinRequests)),
	}
}

// apply makes w a profile when a profile flag was given (or w has one
// from a sweep file) and sets the fields given, refusing a camera ladder
// flag beside a profile.
func (f *profileFlags) apply(given map[string]bool, w *protocol.Workload) error {
	profile := slices.ContainsFunc(profileFlagNames, func(n string) bool { return given[n] })
	if !profile && w.Profile == nil {
		return nil
	}
	for _, name := range workloadFlagOrder {
		instead, camera := cameraOnlyFlags[name]
		if !given[name] || !camera {
			continue
		}
		if instead != "" {
			instead = "; " + instead + " is the profile's"
		}
		return fmt.Errorf("--%s sets the camera ladders, which a profile (--isl, --osl, --concurrency, ... or a sweep file's workload.profile) does not measure%s",
			name, instead)
	}
	warmup := w.WarmupRequests
	if w.Profile == nil {
		asProfile(w)
	}
	if given["warmup"] {
		// --warmup is both kinds': a profile discards its warm-ups before
		// each length pair and image size.
		w.Profile.WarmupRequests, w.WarmupRequests = warmup, 0
	}
	if given["isl"] || given["osl"] {
		if err := f.setLengths(given, w.Profile); err != nil {
			return err
		}
	}
	for _, name := range profileFlagNames {
		if given[name] {
			if err := f.set(name, w.Profile); err != nil {
				return err
			}
		}
	}
	return nil
}

// asProfile turns a camera workload into DefaultProfile, keeping what
// both share (the prompt, the timeout, the cache switches, the pictures).
func asProfile(w *protocol.Workload) {
	p := protocol.DefaultProfileWorkload()
	p.Prompt, p.RequestTimeoutSec, p.CachePrompt, p.UniqueImages, p.ImageSet = w.Prompt, w.RequestTimeoutSec, w.CachePrompt, w.UniqueImages, w.ImageSet
	*w = p
}

func (f *profileFlags) set(name string, p *protocol.ProfileWorkload) error {
	var err error
	switch name {
	case "image-size":
		p.Resolutions, err = listFlag(name, parseResolutions, *f.imageSize)
	case "image-format":
		switch v := strings.ToLower(strings.TrimSpace(*f.imageFormat)); v {
		case protocol.ImageFormatPNG, protocol.ImageFormatJPEG:
			p.ImageFormat = v
		case "jpg":
			p.ImageFormat = protocol.ImageFormatJPEG
		default:
			return fmt.Errorf("--image-format %.40q: want png or jpeg", *f.imageFormat)
		}
	case "profile-images":
		p.ImagesPerRequest, err = checkInt(name, *f.images, 0, protocol.MaxImagesInRequest)
	case "concurrency":
		err = f.setConcurrency(p)
	case "auto-ceiling":
		if !p.Auto() {
			return fmt.Errorf("--auto-ceiling is the ceiling of --concurrency auto; --concurrency %s lists the levels", protocol.JoinInts(p.Concurrency))
		}
		p.AutoCeiling, err = checkInt(name, *f.autoCeiling, 1, protocol.MaxCameraLevel)
	case "no-stream":
		p.NoStream = *f.noStream
	case "extra-body":
		p.ExtraBody, err = readExtraBody(*f.extraBody)
	case "profile-requests":
		p.RequestsPerLevel, err = checkInt(name, *f.requests, 0, protocol.MaxRequestsPerComb)
	}
	return err
}

// setLengths pairs --isl and --osl by position, a list of one standing for
// every item of the other; the one not given keeps the workload's.
func (f *profileFlags) setLengths(given map[string]bool, p *protocol.ProfileWorkload) error {
	var isl, osl []int
	for _, l := range p.Lengths {
		isl, osl = append(isl, l.ISL), append(osl, l.OSL)
	}
	isl, osl = sameIfOne(isl), sameIfOne(osl)
	var err error
	if given["isl"] {
		if isl, err = listFlag("isl", tokenList(0), *f.isl); err != nil {
			return err
		}
	}
	if given["osl"] {
		if osl, err = listFlag("osl", tokenList(1), *f.osl); err != nil {
			return err
		}
	}
	n := max(len(isl), len(osl))
	if (len(isl) != n && len(isl) != 1) || (len(osl) != n && len(osl) != 1) {
		return fmt.Errorf("--isl has %d lengths and --osl %d: they pair by position, so give as many of each, or one --osl for every --isl (or one --isl for every --osl)",
			len(isl), len(osl))
	}
	p.Lengths = make([]protocol.LengthPair, n)
	for i := range n {
		p.Lengths[i] = protocol.LengthPair{ISL: isl[min(i, len(isl)-1)], OSL: osl[min(i, len(osl)-1)]}
	}
	return nil
}

// sameIfOne is ns as one item when all its items are equal, so that the
// workload's one OSL (or ISL) stands for every item of the flag given.
func sameIfOne(ns []int) []int {
	if len(ns) > 1 && !slices.ContainsFunc(ns, func(n int) bool { return n != ns[0] }) {
		return ns[:1]
	}
	return ns
}

func (f *profileFlags) setConcurrency(p *protocol.ProfileWorkload) error {
	if strings.EqualFold(strings.TrimSpace(*f.concurrency), "auto") {
		if !p.Auto() || p.AutoCeiling == 0 {
			p.AutoCeiling = protocol.DefaultProfileAutoCeiling
		}
		p.Concurrency = nil
		return nil
	}
	levels, err := protocol.ParseIntList(*f.concurrency, 1, protocol.MaxCameraLevel)
	if err != nil {
		return fmt.Errorf("--concurrency: %w, or auto", err)
	}
	p.Concurrency, p.AutoCeiling = levels, 0
	return nil
}

// tokenList reads token lengths lo..MaxProfileTokens; a length may repeat
// (ISL 1000 with OSL 200 and with OSL 400).
func tokenList(lo int) func(string) ([]int, error) {
	return func(v string) ([]int, error) {
		var out []int
		for _, s := range protocol.SplitList(v) {
			n, err := strconv.Atoi(s)
			if err != nil || n < lo || n > protocol.MaxProfileTokens {
				return nil, fmt.Errorf("%.40q is not a whole number of tokens in %d..%d", s, lo, protocol.MaxProfileTokens)
			}
			out = append(out, n)
		}
		if len(out) == 0 {
			return nil, errors.New("at least one length is needed")
		}
		return out, nil
	}
}

func parseResolutions(v string) ([]protocol.Resolution, error) {
	var out []protocol.Resolution
	for _, s := range protocol.SplitList(v) {
		r, err := protocol.ParseResolution(s)
		if err != nil {
			return nil, err
		}
		if slices.Contains(out, r) {
			return nil, fmt.Errorf("%s is listed twice", r)
		}
		out = append(out, r)
	}
	if len(out) == 0 {
		return nil, errors.New("at least one size WxH is needed, e.g. 1120x1120")
	}
	return out, nil
}

// readExtraBody is --extra-body: JSON, or @FILE holding it; an object that
// sets no field vlmfleet owns, or "" for none.
func readExtraBody(v string) (json.RawMessage, error) {
	data := []byte(strings.TrimSpace(v))
	if path, ok := strings.CutPrefix(string(data), "@"); ok {
		var err error
		if data, err = readSmallFile(path, protocol.MaxProfileExtraBody); err != nil {
			return nil, fmt.Errorf("--extra-body: %w", err)
		}
	}
	if len(data) == 0 {
		return nil, nil
	}
	if err := protocol.ValidateExtraBody("--extra-body", data); err != nil {
		return nil, err
	}
	return json.RawMessage(data), nil
}

// readSmallFile reads a file of at most limit bytes.
func readSmallFile(path string, limit int) ([]byte, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	data, err := io.ReadAll(io.LimitReader(fh, int64(limit)+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if len(data) > limit {
		return nil, fmt.Errorf("%s: more than %d bytes", path, limit)
	}
	return data, nil
}
