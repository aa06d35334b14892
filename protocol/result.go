package protocol

import "time"

// Stats summarises one figure over the completed requests of a combination.
// Percentiles use the nearest-rank method on the sorted values.
type Stats struct {
	N    int     `json:"n"`
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	Min  float64 `json:"min"`
	Max  float64 `json:"max"`
}

// Token count sources recorded on every request.
const (
	TokensFromUsage  = "usage"
	TokensFromChunks = "chunks"
)

// RequestRecord is one measured request. Times are seconds from just before
// the request was written, on a monotonic clock.
type RequestRecord struct {
	Camera int `json:"camera"`
	Seq    int `json:"seq"`
	// Start is when the request was sent, in seconds since the combination began
	// (against the simulator, on its clock, as its other times are).
	Start float64 `json:"start"`
	// TTFB is the first response byte; RoleChunk the first SSE event that carried
	// choices but no token (0 when the server sent none).
	TTFB      float64 `json:"ttfb"`
	RoleChunk float64 `json:"role_chunk,omitempty"`
	// TTFT is the first chunk whose delta carries non-empty content,
	// reasoning_content, reasoning or tool_calls.
	TTFT float64 `json:"ttft"`
	// LastToken is the last chunk that carried a token.
	LastToken        float64 `json:"last_token"`
	E2E              float64 `json:"e2e"`
	CompletionTokens int     `json:"completion_tokens"`
	TokenSource      string  `json:"token_source,omitempty"`
	PromptTokens     int     `json:"prompt_tokens,omitempty"`
	// TPS is DecodeTokens / (LastToken - TTFT): the tokens that arrived
	// after the read that delivered the first one, over the time from that
	// read to the last. 0 when nothing arrived after the first read: the
	// rate is then not measurable (see DecodeTokens).
	TPS float64 `json:"tps"`
	// ITL is the mean gap between the token chunks after the first read.
	ITL float64 `json:"itl"`
	// Images is the number of images the request carried.
	Images int `json:"images"`
	// ISL is the text length a profile request asked for (0 elsewhere);
	// PromptTokens is what the server counted.
	ISL int `json:"isl,omitempty"`
	// Timings is llama.cpp's "timings" object, kept as sent.
	Timings      map[string]float64 `json:"timings,omitempty"`
	FinishReason string             `json:"finish_reason,omitempty"`
	Error        string             `json:"error,omitempty"`

	// Measurement correctness: what a rate and a cache hit are made of.

	// DecodeTokens is the completion tokens that arrived after the read that
	// delivered the first token (with usage counts, in proportion to the
	// token chunks). Tokens that arrive in one burst with the first have no
	// measurable decode time, so they are not counted in TPS.
	DecodeTokens int `json:"decode_tokens,omitempty"`
	// CachedTokens is the prompt tokens the server says it served from a
	// cache: llama.cpp's timings.cache_n, or OpenAI's
	// usage.prompt_tokens_details.cached_tokens.
	CachedTokens int `json:"cached_tokens,omitempty"`
}

// ErrorCount is one distinct failure and how often it happened.
type ErrorCount struct {
	Error string `json:"error"`
	Count int    `json:"count"`
}

// Combination is everything measured at one (size, images, cameras).
type Combination struct {
	ComboKey
	Width  int `json:"width"`
	Height int `json:"height"`

	Completed int          `json:"completed"`
	Failed    int          `json:"failed"`
	Errors    []ErrorCount `json:"errors,omitempty"`

	TTFT Stats `json:"ttft"`
	// TPS's mean is pooled (every request's DecodeTokens over every one's
	// decode time), its percentiles, min and max the requests' own rates;
	// N 0 means not measurable (no token came after a first token's read).
	TPS       Stats `json:"tps"`
	E2E       Stats `json:"e2e"`
	ITL       Stats `json:"itl"`
	TTFB      Stats `json:"ttfb"`
	RoleChunk Stats `json:"role_chunk"`

	PromptTokens     Stats `json:"prompt_tokens"`
	CompletionTokens Stats `json:"completion_tokens"`
	// OutputTokensPerSec is the sum of completion tokens over the measured wall time.
	OutputTokensPerSec float64 `json:"output_tokens_per_sec"`
	// MaxInFlight is the most requests observed in flight at once; never above Cameras.
	MaxInFlight int `json:"max_in_flight"`
	// WallSec is the measured wall time, warm-up excluded.
	WallSec float64 `json:"wall_sec"`
	// Warmup is the number of discarded warm-up requests that ran before.
	Warmup int `json:"warmup"`

	StartedAt  time.Time `json:"started_at"`
	FinishedAt time.Time `json:"finished_at"`

	Telemetry *TelemetrySummary `json:"telemetry,omitempty"`
	// TelemetrySeries is every sample taken during the combination.
	TelemetrySeries []TelemetrySample `json:"telemetry_series,omitempty"`

	Requests []RequestRecord `json:"requests,omitempty"`

	// Measurement correctness.

	// CachedPromptTokens is the prompt tokens of the completed requests that
	// the server says it served from a cache (the sum of their
	// RequestRecord.CachedTokens), and CachedRequests how many requests had
	// any: beside PromptTokens, how far the figures are a cache's.
	CachedPromptTokens int `json:"cached_prompt_tokens,omitempty"`
	CachedRequests     int `json:"cached_requests,omitempty"`

	// The buyer's answer.

	// Tail is the TTFT over every answer due, for judging by a percentile
	// (Judgement); nil in runs from before it was recorded.
	Tail *TTFTTail `json:"ttft_tail,omitempty"`
	// Pacing is what a combination on a frame clock recorded; nil back to
	// back.
	Pacing *Pacing `json:"pacing,omitempty"`
	// Search says that a search for the exact Max Cameras chose this
	// level; it is measured as every other is.
	Search bool `json:"search,omitempty"`
	// Rounds and WindowSec are a sustained level's (ComboKey.Load): the
	// fewest measured requests any camera sent in the window, and the
	// window's length in seconds, from its opening to the send that
	// closed it. A burst records neither.
	Rounds    int     `json:"rounds,omitempty"`
	WindowSec float64 `json:"window_sec,omitempty"`
	// Energy is what the combination drew; nil when it had no power
	// samples.
	Energy *Energy `json:"energy,omitempty"`
	// Profile is a profile level's figures (profileworkload.go); nil on
	// the camera ladders.
	Profile *ProfileLevel `json:"profile,omitempty"`
}

// ClientInfo says what measured.
type ClientInfo struct {
	Name         string `json:"name"`
	Version      string `json:"version"`
	ImageSet     string `json:"image_set"`
	ImageSetHash string `json:"image_set_hash"`
	ImageCount   int    `json:"image_count"`
	Go           string `json:"go,omitempty"`
}

// EngineSim is the engine kind of the simulator: a run of it is
// simulated wherever it is read. The other kinds are the agent's
// (agent/engine registers them); the wire carries them as plain strings.
const EngineSim = "sim"

// EngineInfo records exactly how the engine ran.
type EngineInfo struct {
	// Kind is the engine kind the agent's config named ("sim" for the simulator).
	Kind string `json:"kind"`
	// Name is the engine as shown to people: "vLLM", "llama.cpp", ...
	Name     string            `json:"name"`
	Version  string            `json:"version,omitempty"`
	Command  []string          `json:"command,omitempty"`
	Endpoint string            `json:"endpoint,omitempty"`
	Model    string            `json:"model,omitempty"`
	Props    map[string]string `json:"props,omitempty"`
	LogTail  string            `json:"log_tail,omitempty"`
}

// Configuration is what makes a row of the explorer: a model, in a number
// format, served by an engine, on a device.
type Configuration struct {
	Model string `json:"model"`
	// ParamsB is the total parameter count in billions as published, vision encoder included.
	ParamsB      float64 `json:"params_b"`
	Quantization string  `json:"quantization"`
	// Engine is the engine's display name ("vLLM", "llama.cpp", ...).
	Engine string `json:"engine"`
	// Device is the device's display name ("Jetson AGX Orin", "RTX PRO 6000 Max-Q", ...).
	Device string `json:"device"`
	// PowerMode is the Jetson's nvpmodel mode the run measured in, and
	// PowerLimitW the GPU power limit a job set: part of the row's
	// identity, so that two modes of one model on one device are two
	// rows, never a regression of one another. Empty: not known (a run
	// from before the agent recorded it, an imported table).
	PowerMode   string  `json:"power_mode,omitempty"`
	PowerLimitW float64 `json:"power_limit_w,omitempty"`
	// GPU and GPUCount are the accelerator that served the model and how
	// many of them, and TP the tensor-parallel size it was split over:
	// a profile line's identity. Empty or 0: not known.
	GPU      string `json:"gpu,omitempty"`
	GPUCount int    `json:"gpu_count,omitempty"`
	TP       int    `json:"tp,omitempty"`
}

// Run statuses.
const (
	RunRunning   = "running"
	RunCompleted = "completed"
	RunFailed    = "failed"
	RunCancelled = "cancelled"
)

// Sources of a run.
const (
	SourceLab    = "lab"
	SourceBench  = "bench"
	SourceImport = "import"
)

// Run is the result document: one configuration measured over one workload.
// It is what an agent publishes, what `vlmfleet bench --json` writes and what
// `vlmfleet results import` reads.
type Run struct {
	Schema  int    `json:"schema"`
	ID      string `json:"id"`
	JobID   string `json:"job_id,omitempty"`
	SweepID string `json:"sweep_id,omitempty"`
	AgentID string `json:"agent_id,omitempty"`

	// Simulated is true when the engine or the device was simulated; such a
	// run is labelled wherever it is shown.
	Simulated bool `json:"simulated"`
	// SimSpeedup is the time compression of a simulated engine: its delays were
	// divided by it and the recorded times multiplied back. 0 or 1 means real time.
	SimSpeedup float64 `json:"sim_speedup,omitempty"`
	Source     string  `json:"source"`
	// Origin says where an imported run came from (file name, controller).
	Origin string `json:"origin,omitempty"`

	Config   Configuration `json:"config"`
	Workload Workload      `json:"workload"`
	Status   string        `json:"status"`
	Error    string        `json:"error,omitempty"`

	CreatedAt  time.Time `json:"created_at"`
	StartedAt  time.Time `json:"started_at,omitempty"`
	FinishedAt time.Time `json:"finished_at,omitempty"`

	Engine EngineInfo  `json:"engine"`
	Device DeviceFacts `json:"device"`
	Client ClientInfo  `json:"client"`

	Combinations []Combination `json:"combinations"`

	// Measurement correctness.

	// Warnings are what makes the run's figures doubtful although it ran:
	// prompts served from a cache in a run meant to be cache-free, fewer
	// server slots than cameras. Each is one line.
	Warnings []string `json:"warnings,omitempty"`

	// IdlePower is the device's draw before the first combination, for
	// the energy above idle; nil when it was not sampled.
	IdlePower *IdlePower `json:"idle_power,omitempty"`
}

// Combination returns the measured combination with key k.
func (r *Run) Combination(k ComboKey) (*Combination, bool) {
	for i := range r.Combinations {
		if r.Combinations[i].ComboKey == k {
			return &r.Combinations[i], true
		}
	}
	return nil, false
}
