package protocol

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// ProfileWorkload is a latency and throughput profile, as NVIDIA's vision
// NIM tables are measured (explorer/profiles): requests of a sized text
// (ISL) and a forced answer length (OSL) with images of a fixed size, at
// concurrency levels from 1 to the one that saturates the request
// throughput. A Workload with a Profile measures the profile, not the
// camera ladders.
type ProfileWorkload struct {
	// Lengths lists the (ISL, OSL) pairs measured, in order.
	Lengths []LengthPair `json:"lengths"`
	// Resolutions lists the image sizes measured, in order.
	Resolutions []Resolution `json:"resolutions"`
	// ImageFormat is ImageFormatJPEG or ImageFormatPNG.
	ImageFormat string `json:"image_format"`
	// ImagesPerRequest is how many images each request carries (0: none).
	ImagesPerRequest int `json:"images_per_request"`
	// Concurrency lists the levels measured. Empty with AutoCeiling set:
	// the levels double from 1 (ProfileAutoRule).
	Concurrency []int `json:"concurrency,omitempty"`
	// AutoCeiling, above 0, is the highest level the automatic rule may
	// measure.
	AutoCeiling int `json:"auto_ceiling,omitempty"`
	// NoStream sends requests without streaming: the answer comes whole,
	// so a level has request latency and throughput but no TTFT or ITL.
	NoStream bool `json:"no_stream,omitempty"`
	// ExtraBody is a JSON object merged into every request's body (e.g.
	// nemoretriever-parse's tools). It may not set a field vlmfleet owns
	// (ProfileOwnedFields).
	ExtraBody json.RawMessage `json:"extra_body,omitempty"`
	// RequestsPerLevel is the measured requests at each level (at least
	// the level's concurrency); WarmupRequests those sent before each
	// (length, resolution) and discarded.
	RequestsPerLevel int `json:"requests_per_level"`
	WarmupRequests   int `json:"warmup_requests"`
}

// LengthPair is one text input length and output length, in tokens.
type LengthPair struct {
	// ISL is the text's length in the server's tokens, the image's and
	// the chat template's not counted; 0: the text is not sized (the
	// workload's prompt is sent as it is).
	ISL int `json:"isl"`
	// OSL is the answer's length asked for (max_tokens, and the engine's
	// forced-length switches).
	OSL int `json:"osl"`
}

// Resolution is an image's size in pixels; its text form is "1120x1120".
type Resolution struct {
	Width  int `json:"width"`
	Height int `json:"height"`
}

// String is "WxH".
func (r Resolution) String() string { return fmt.Sprintf("%dx%d", r.Width, r.Height) }

// ParseResolution reads "WxH" (each side 1..MaxProfileImageSide).
func ParseResolution(s string) (Resolution, error) {
	w, h, ok := strings.Cut(strings.ToLower(strings.TrimSpace(s)), "x")
	if !ok {
		return Resolution{}, fmt.Errorf("image size %.50q: want WIDTHxHEIGHT in pixels, e.g. 1120x1120", s)
	}
	wi, errW := strconv.Atoi(w)
	hi, errH := strconv.Atoi(h)
	if errW != nil || errH != nil {
		return Resolution{}, fmt.Errorf("image size %.50q: want WIDTHxHEIGHT in whole pixels, e.g. 1120x1120", s)
	}
	r := Resolution{Width: wi, Height: hi}
	if err := r.Validate(); err != nil {
		return Resolution{}, fmt.Errorf("image size %.50q: %w", s, err)
	}
	return r, nil
}

// Validate checks both sides.
func (r Resolution) Validate() error {
	if r.Width < 1 || r.Width > MaxProfileImageSide || r.Height < 1 || r.Height > MaxProfileImageSide {
		return fmt.Errorf("%dx%d: each side must be 1..%d pixels", r.Width, r.Height, MaxProfileImageSide)
	}
	return nil
}

// ProfileOwnedFields are the request fields vlmfleet sets itself, which
// ExtraBody may not set: the engines' forced-length switches among them.
var ProfileOwnedFields = []string{"messages", "model", "stream", "stream_options", "max_tokens",
	"max_completion_tokens", "min_tokens", "ignore_eos", "n_predict"}

// ProfileAutoRule is the automatic concurrency rule, as the page and the
// CLI state it.
const ProfileAutoRule = "concurrency doubles from 1 until request throughput grows by less than 5 %, " +
	"a level fails requests, or the ceiling; max throughput is the smallest level within 5 % of the highest"

// Profile figures recorded per level (Combination.Profile).
type ProfileLevel struct {
	LengthPair
	Resolution
	ImageFormat string `json:"image_format"`
	Concurrency int    `json:"concurrency"`
	Stream      bool   `json:"stream"`

	// ImageTokens is what the calibration probe measured the images (and
	// the chat template) to add to the prompt's tokens; PromptTokens the
	// mean the server counted per request. TextTokensEstimated: the
	// server reported no usage, and the text's tokens are its words.
	ImageTokens         int     `json:"image_tokens"`
	PromptTokens        float64 `json:"prompt_tokens"`
	TextTokensEstimated bool    `json:"text_tokens_estimated,omitempty"`

	// The figures, by genai-perf's definitions (docs/profiles.md), in
	// milliseconds; nil where the level cannot have them (not streamed).
	TTFTMs           *float64 `json:"ttft_ms"`
	ITLMs            *float64 `json:"itl_ms"`
	RequestLatencyMs float64  `json:"request_latency_ms"`
	// RequestThroughput is completed requests over the window from the
	// first request's start to the last answer's end, per second.
	RequestThroughput  float64 `json:"request_throughput"`
	OutputTokensPerSec float64 `json:"output_tokens_per_sec"`

	// OSLHeld says every answer was OSL tokens long by the server's
	// usage; else OSLShort requests were short and OSLMean is the mean.
	OSLHeld  bool    `json:"osl_held"`
	OSLShort int     `json:"osl_short,omitempty"`
	OSLMean  float64 `json:"osl_mean"`
	// SwitchesDropped names the forced-length switches the server refused
	// (400) and the level was measured without.
	SwitchesDropped []string `json:"switches_dropped,omitempty"`
	// ForcedBy names the switches sent to force OSL ("min_tokens",
	// "ignore_eos"); empty: the engine has none (Ollama), said so.
	ForcedBy []string `json:"forced_by,omitempty"`

	// MaxThroughput marks the level the rule chose as the max-throughput
	// point of its (length, resolution).
	MaxThroughput bool `json:"max_throughput,omitempty"`
}
