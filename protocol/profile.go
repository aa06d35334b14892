package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"unicode"
)

// The two tables of a latency and throughput profile.
const (
	// ProfileMinLatency is the table measured at concurrency 1.
	ProfileMinLatency = "min_latency"
	// ProfileMaxThroughput is the table measured at the concurrency that
	// saturates the request throughput.
	ProfileMaxThroughput = "max_throughput"
)

// Where a profile line comes from.
const (
	// ProfileSourcePublished is a line transcribed from a vendor's page.
	ProfileSourcePublished = "published"
	// ProfileSourceMeasured is a line vlmfleet measured (or simulated).
	ProfileSourceMeasured = "measured"
)

// Image formats a profile line can be measured with.
const (
	ImageFormatPNG  = "png"
	ImageFormatJPEG = "jpeg"
)

// Bounds of a profile line's identity.
const (
	// MaxProfileImageSide is the widest and tallest image a profile sends.
	MaxProfileImageSide = 8192
	// MaxProfileTokens bounds ISL and OSL: far above any context window
	// served today, low enough that a typo is caught.
	MaxProfileTokens = 10_000_000
	// MaxProfileGPUs bounds gpu_count and tp.
	MaxProfileGPUs = 1024
	// MaxProfileName bounds model, gpu, precision, engine and note.
	MaxProfileName = 200
)

// ProfileRow is one line of a latency and throughput table: the figures
// of one configuration (model, GPU, precision, TP, ISL, OSL, image) in
// one of the two tables. It is what GET /api/explorer/profiles and
// `vlmfleet explorer profiles --json` answer, one per table line.
//
// Every key is always present. A figure the table does not give is null,
// never 0 or left out: a published Max Throughput line has no TTFT, a
// non-streamed line no ITL, and nemoretriever-parse's lines no ISL. A
// script can so tell "not given" from "zero" on every row alike.
type ProfileRow struct {
	Model string `json:"model"`
	// GPU is the accelerator's name as the source spells it, e.g.
	// "H100-HBM3-80GB".
	GPU string `json:"gpu"`
	// GPUCount is how many of them served the model.
	GPUCount int `json:"gpu_count"`
	// Precision of the weights: FP8, BF16, ...
	Precision string `json:"precision"`
	// TP is the tensor-parallel size: the model is split over TP GPUs.
	TP int `json:"tp"`
	// Engine is what served the model ("NIM", "vLLM", ...).
	Engine string `json:"engine"`
	// Profile is the table: ProfileMinLatency or ProfileMaxThroughput.
	Profile string `json:"profile"`
	// ISL is the text input length in tokens, the image's tokens not
	// counted; null where the table has none (the text is not sized).
	ISL *int `json:"isl"`
	// OSL is the output length in tokens the requests asked for.
	OSL int `json:"osl"`
	// Width and Height are the image's, in pixels.
	Width  int `json:"width"`
	Height int `json:"height"`
	// ImageFormat is ImageFormatPNG or ImageFormatJPEG.
	ImageFormat string `json:"image_format"`
	// Concurrency is the requests in flight at once; null where the
	// source does not say (a published Max Throughput line).
	Concurrency *int `json:"concurrency"`
	// TTFTMs is the mean time to the first content token.
	TTFTMs *float64 `json:"ttft_ms"`
	// ITLMs is the mean inter-token latency: (latency − TTFT)/(OSL − 1).
	ITLMs *float64 `json:"itl_ms"`
	// RequestLatencyMs is the mean time to the last token.
	RequestLatencyMs *float64 `json:"request_latency_ms"`
	// RequestThroughput is completed requests per second over the
	// measured window.
	RequestThroughput *float64 `json:"request_throughput"`
	// OutputTokensPerSec is output tokens per second over the window.
	OutputTokensPerSec *float64 `json:"output_tokens_per_sec"`
	// OSLHeld says whether every answer was as long as OSL asked; null
	// where that is not known (a published line).
	OSLHeld *bool `json:"osl_held"`
	// Source is ProfileSourcePublished or ProfileSourceMeasured.
	Source string `json:"source"`
	// Simulated marks a line measured against the simulator.
	Simulated bool `json:"simulated"`
	// Note says where a line comes from, for people: "published (NVIDIA
	// NIM, genai-perf)"; empty when there is nothing to say.
	Note string `json:"note"`
}

// ProfileRows is the answer of GET /api/explorer/profiles.
type ProfileRows struct {
	Rows []ProfileRow `json:"rows"`
}

// Validate checks a row; the error names the field and what is allowed.
func (r ProfileRow) Validate() error {
	for _, f := range []struct{ name, v string }{
		{"model", r.Model}, {"gpu", r.GPU}, {"precision", r.Precision}, {"engine", r.Engine},
	} {
		if err := checkProfileName(f.v); err != nil {
			return fmt.Errorf("%s: %w", f.name, err)
		}
	}
	if r.Note != "" {
		if err := checkProfileName(r.Note); err != nil {
			return fmt.Errorf("note: %w", err)
		}
	}
	if err := r.validateIdentity(); err != nil {
		return err
	}
	if err := r.validateFigures(); err != nil {
		return err
	}
	switch r.Source {
	case ProfileSourcePublished:
		if r.Simulated {
			return errors.New("simulated: true on a published line; a simulated line is measured")
		}
	case ProfileSourceMeasured:
	default:
		return fmt.Errorf("source: %.50q, want %s or %s", r.Source, ProfileSourcePublished, ProfileSourceMeasured)
	}
	return nil
}

func (r ProfileRow) validateIdentity() error {
	if r.GPUCount < 1 || r.GPUCount > MaxProfileGPUs {
		return fmt.Errorf("gpu_count: %d, want 1..%d", r.GPUCount, MaxProfileGPUs)
	}
	if r.TP < 1 || r.TP > r.GPUCount {
		return fmt.Errorf("tp: %d, want 1..gpu_count (%d): the model is split over at most the GPUs that serve it", r.TP, r.GPUCount)
	}
	if r.Profile != ProfileMinLatency && r.Profile != ProfileMaxThroughput {
		return fmt.Errorf("profile: %.50q, want %s or %s", r.Profile, ProfileMinLatency, ProfileMaxThroughput)
	}
	if r.ISL != nil && (*r.ISL < 1 || *r.ISL > MaxProfileTokens) {
		return fmt.Errorf("isl: %d, want 1..%d, or null where the text is not sized", *r.ISL, MaxProfileTokens)
	}
	if r.OSL < 1 || r.OSL > MaxProfileTokens {
		return fmt.Errorf("osl: %d, want 1..%d", r.OSL, MaxProfileTokens)
	}
	if r.Width < 1 || r.Width > MaxProfileImageSide {
		return fmt.Errorf("width: %d, want 1..%d pixels", r.Width, MaxProfileImageSide)
	}
	if r.Height < 1 || r.Height > MaxProfileImageSide {
		return fmt.Errorf("height: %d, want 1..%d pixels", r.Height, MaxProfileImageSide)
	}
	if r.ImageFormat != ImageFormatPNG && r.ImageFormat != ImageFormatJPEG {
		return fmt.Errorf("image_format: %.50q, want %s or %s", r.ImageFormat, ImageFormatPNG, ImageFormatJPEG)
	}
	if c := r.Concurrency; c != nil {
		if *c < 1 {
			return fmt.Errorf("concurrency: %d, want 1 or more, or null where it is not known", *c)
		}
		if r.Profile == ProfileMinLatency && *c != 1 {
			return fmt.Errorf("concurrency: %d on a %s line, want 1 (min latency is one request at a time)", *c, ProfileMinLatency)
		}
	}
	return nil
}

func (r ProfileRow) validateFigures() error {
	for _, f := range []struct {
		name string
		v    *float64
	}{
		{"ttft_ms", r.TTFTMs}, {"itl_ms", r.ITLMs}, {"request_latency_ms", r.RequestLatencyMs},
		{"request_throughput", r.RequestThroughput}, {"output_tokens_per_sec", r.OutputTokensPerSec},
	} {
		if f.v != nil && (math.IsNaN(*f.v) || math.IsInf(*f.v, 0) || *f.v < 0) {
			return fmt.Errorf("%s: %v, want a finite number 0 or more, or null where it is not known", f.name, *f.v)
		}
	}
	// Each table has its defining figure; a line without it says nothing.
	if r.Profile == ProfileMinLatency && r.RequestLatencyMs == nil {
		return fmt.Errorf("request_latency_ms: null on a %s line, want the mean request latency", ProfileMinLatency)
	}
	if r.Profile == ProfileMaxThroughput && r.RequestThroughput == nil {
		return fmt.Errorf("request_throughput: null on a %s line, want the requests per second", ProfileMaxThroughput)
	}
	return nil
}

func checkProfileName(s string) error {
	if s == "" {
		return errors.New("empty, want a name")
	}
	if len(s) > MaxProfileName {
		return fmt.Errorf("%d bytes, want at most %d", len(s), MaxProfileName)
	}
	for _, c := range s {
		if c == unicode.ReplacementChar || !unicode.IsPrint(c) {
			return fmt.Errorf("%.50q: want printable text (no control characters)", s)
		}
	}
	return nil
}

// DecodeProfileRows reads GET /api/explorer/profiles's answer: one JSON
// document whose rows each pass Validate. Unknown fields are allowed (a
// newer writer may add some); an error names the row and the field.
func DecodeProfileRows(data []byte) (ProfileRows, error) {
	if len(data) > MaxMessageBytes {
		return ProfileRows{}, fmt.Errorf("profile rows: %d bytes, more than the %d allowed", len(data), MaxMessageBytes)
	}
	var v ProfileRows
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&v); err != nil {
		return ProfileRows{}, fmt.Errorf("profile rows: %w", DescribeJSONError(data, dec.InputOffset(), err))
	}
	if dec.More() {
		return ProfileRows{}, errors.New("profile rows: trailing data after the JSON document")
	}
	if v.Rows == nil {
		return ProfileRows{}, errors.New(`profile rows: no "rows" array`)
	}
	for i, r := range v.Rows {
		if err := r.Validate(); err != nil {
			return ProfileRows{}, fmt.Errorf("profile rows: rows[%d]: %w", i, err)
		}
	}
	return v, nil
}
