package protocol

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Limits on a profile workload's lists. The seed page measures 3 length
// pairs and 2 image sizes; these leave room for a lab's own sweep and
// keep a typo from planning days (the plan is still held to
// MaxPlannedCombinations).
const (
	MaxProfileLengths     = 64
	MaxProfileResolutions = 64
	// MaxProfileExtraBody bounds extra_body's JSON: a tool list or two.
	MaxProfileExtraBody = MaxTextLen
)

// Validate reports the first field of the profile that is wrong and what
// is allowed, each named as it is in a job's JSON
// (workload.profile.lengths[1].osl).
func (p ProfileWorkload) Validate() error {
	if err := p.checkSize(); err != nil {
		return err
	}
	if err := p.validateLengths(); err != nil {
		return err
	}
	if err := p.validateResolutions(); err != nil {
		return err
	}
	if p.ImageFormat != ImageFormatPNG && p.ImageFormat != ImageFormatJPEG {
		return fmt.Errorf("workload.profile.image_format: %.40q, want %s or %s", p.ImageFormat, ImageFormatPNG, ImageFormatJPEG)
	}
	if n := p.ImagesPerRequest; n < 0 || n > MaxImagesInRequest {
		return fmt.Errorf("workload.profile.images_per_request: %d, want 0 (text only) up to %d", n, MaxImagesInRequest)
	}
	if p.ImagesPerRequest == 0 && len(p.Resolutions) > 1 {
		// Each size would measure the same text-only requests again.
		return fmt.Errorf("workload.profile.resolutions: %d image sizes, but images_per_request is 0 (text only): keep one", len(p.Resolutions))
	}
	if err := p.validateConcurrency(); err != nil {
		return err
	}
	if n := p.RequestsPerLevel; n < 0 || n > MaxRequestsPerComb {
		return fmt.Errorf("workload.profile.requests_per_level: %d, want 1..%d, or 0 for max(%d, 2 × concurrency)",
			n, MaxRequestsPerComb, DefaultProfileMinRequests)
	}
	if n := p.WarmupRequests; n < 0 || n > 100 {
		return fmt.Errorf("workload.profile.warmup_requests: %d, want 0..100", n)
	}
	return ValidateExtraBody("workload.profile.extra_body", p.ExtraBody)
}

func (p ProfileWorkload) validateLengths() error {
	if len(p.Lengths) == 0 {
		return fmt.Errorf("workload.profile.lengths: at least one (isl, osl) pair is needed")
	}
	for i, l := range p.Lengths {
		if l.ISL < 0 || l.ISL > MaxProfileTokens {
			return fmt.Errorf("workload.profile.lengths[%d].isl: %d, want 0 (the prompt as written) up to %d", i, l.ISL, MaxProfileTokens)
		}
		if l.OSL < 1 || l.OSL > MaxProfileTokens {
			return fmt.Errorf("workload.profile.lengths[%d].osl: %d, want 1..%d", i, l.OSL, MaxProfileTokens)
		}
		if j := slices.Index(p.Lengths[:i], l); j >= 0 {
			return fmt.Errorf("workload.profile.lengths[%d]: ISL %d / OSL %d is listed twice (lengths[%d] too)", i, l.ISL, l.OSL, j)
		}
	}
	return nil
}

func (p ProfileWorkload) validateResolutions() error {
	if len(p.Resolutions) == 0 {
		return fmt.Errorf("workload.profile.resolutions: at least one image size (WxH) is needed")
	}
	for i, r := range p.Resolutions {
		if err := r.Validate(); err != nil {
			return fmt.Errorf("workload.profile.resolutions[%d]: %w", i, err)
		}
		if j := slices.Index(p.Resolutions[:i], r); j >= 0 {
			return fmt.Errorf("workload.profile.resolutions[%d]: %s is listed twice (resolutions[%d] too)", i, r, j)
		}
	}
	return nil
}

func (p ProfileWorkload) validateConcurrency() error {
	if p.Auto() {
		if p.AutoCeiling < 1 || p.AutoCeiling > MaxCameraLevel {
			return fmt.Errorf("workload.profile.auto_ceiling: %d, want 1..%d (the highest level the automatic rule measures; "+
				"or list the levels in workload.profile.concurrency)", p.AutoCeiling, MaxCameraLevel)
		}
		return nil
	}
	if p.AutoCeiling != 0 {
		return fmt.Errorf("workload.profile.auto_ceiling: %d, but workload.profile.concurrency lists the levels; "+
			"give one: the levels, or a ceiling for the automatic rule", p.AutoCeiling)
	}
	seen := make(map[int]int, len(p.Concurrency))
	for i, c := range p.Concurrency {
		if c < 1 || c > MaxCameraLevel {
			return fmt.Errorf("workload.profile.concurrency[%d]: %d, want 1..%d", i, c, MaxCameraLevel)
		}
		if j, ok := seen[c]; ok {
			return fmt.Errorf("workload.profile.concurrency[%d]: level %d is listed twice (concurrency[%d] too)", i, c, j)
		}
		seen[c] = i
	}
	return nil
}

// ValidateExtraBody checks an extra_body: empty (or null), or a JSON object of at
// most MaxProfileExtraBody bytes that sets none of ProfileOwnedFields.
// field names it in the error.
func ValidateExtraBody(field string, body json.RawMessage) error {
	if len(body) == 0 || string(bytes.TrimSpace(body)) == "null" {
		return nil
	}
	if len(body) > MaxProfileExtraBody {
		return fmt.Errorf("%s: %d bytes, at most %d", field, len(body), MaxProfileExtraBody)
	}
	var obj map[string]json.RawMessage
	if !bytes.HasPrefix(bytes.TrimSpace(body), []byte("{")) || json.Unmarshal(body, &obj) != nil {
		return fmt.Errorf("%s: want a JSON object ({\"name\": value, ...}) merged into every request's body", field)
	}
	for _, k := range ProfileOwnedFields {
		if _, ok := obj[k]; ok {
			return fmt.Errorf("%s: sets %q, which vlmfleet sets itself; it may not set %s", field, k, strings.Join(ProfileOwnedFields, ", "))
		}
	}
	return nil
}

// profileOnlyFields are the camera ladders' fields, which a profile
// workload leaves empty, each with what the profile has in its place.
var profileOnlyFields = []struct {
	field, instead string
	set            func(w Workload) bool
}{
	{"sizes", "the profile's image sizes", func(w Workload) bool { return len(w.Sizes) > 0 }},
	{"cameras", "the profile's concurrency", func(w Workload) bool { return len(w.Cameras) > 0 }},
	{"requests_per_level", "the profile's requests_per_level", func(w Workload) bool { return w.RequestsPerLevel != 0 }},
	{"multi_image_sizes", "the profile's image sizes", func(w Workload) bool { return len(w.MultiImageSizes) > 0 }},
	{"images_per_request", "the profile's images_per_request", func(w Workload) bool { return len(w.ImagesPerRequest) > 0 }},
	{"multi_image_requests", "the profile's requests_per_level", func(w Workload) bool { return w.MultiImageRequests != 0 }},
	{"warmup_requests", "the profile's warmup_requests", func(w Workload) bool { return w.WarmupRequests != 0 }},
	{"max_tokens", "the profile's OSL", func(w Workload) bool { return w.MaxTokens != 0 }},
	{"frame_interval_sec", "", func(w Workload) bool { return len(w.FrameIntervalSec) > 0 }},
	{"search", "the profile's automatic concurrency", func(w Workload) bool { return w.Search != 0 }},
	{"judgement", "", func(w Workload) bool { return w.Judgement != (Judgement{}) }},
	{"load", "", func(w Workload) bool { return w.Load != "" }},
}

// validateProfileWorkload checks a workload with a profile: the profile,
// the fields both kinds share, and that no camera ladder field is set. A
// profile measures closed-loop clients back to back at each level; frame
// clocks, the camera search and its judgement, burst or sustained load
// are the camera question's, and mixed in they would be silently lost.
func (w Workload) validateProfileWorkload() error {
	for _, f := range profileOnlyFields {
		if !f.set(w) {
			continue
		}
		instead := "a profile has none"
		if f.instead != "" {
			instead = "use " + f.instead
		}
		return fmt.Errorf("workload.%s: a profile workload (workload.profile) does not measure the camera ladders; leave %s out (%s)",
			f.field, f.field, instead)
	}
	if err := w.Profile.Validate(); err != nil {
		return err
	}
	if strings.TrimSpace(w.Prompt) == "" {
		return fmt.Errorf("workload.prompt: must not be empty (a profile sends it as the text of a pair whose ISL is 0)")
	}
	if err := checkLen("workload.prompt", w.Prompt, MaxTextLen); err != nil {
		return err
	}
	return w.validateShared()
}
