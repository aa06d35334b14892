// Package engine starts, watches and stops the serving engine an agent
// measures: a program it starts as a child process, an external server it
// only talks to, or the in-process simulated engine. Each kind is one file
// that registers itself (kinds.go). Every adapter waits until its engine
// really answers, records how it ran (argv, version, properties), and
// turns failures into errors that carry the engine's own last log lines.
package engine

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/rs/zerolog"
	"github.com/vlmfleet/vlmfleet/agent/devicefacts"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// Needs is what the workload asks of the engine: the engine must serve
// MaxCameras requests at once, each with up to MaxImages images of at most
// MaxWidth×MaxHeight pixels and MaxTokens of answer.
type Needs struct {
	MaxCameras, MaxImages, MaxTokens, MaxWidth, MaxHeight int
	// Shapes are the requests the plan sends: each combination's images
	// at its size. The most images and the largest size may come from
	// different families of the plan (the camera levels send one image,
	// the multi-image requests several at their own sizes), so the
	// largest request is the largest of these, not MaxImages images of
	// MaxWidth×MaxHeight. Empty: that one is assumed.
	Shapes []Shape
	// SearchCameras is the most cameras a search of the workload may
	// measure after the ladder (its ceiling); 0 without a search.
	SearchCameras int
	// TextTokens is the longest sized text a request carries (a
	// profile's ISL) beyond the prompt every request has; 0: none.
	TextTokens int
}

// Shape is one kind of request: Images images of Width×Height pixels.
type Shape struct{ Images, Width, Height int }

// NeedsOf derives the needs of a workload.
func NeedsOf(w protocol.Workload) Needs {
	if w.Profile != nil {
		return profileNeeds(*w.Profile)
	}
	n := Needs{MaxCameras: w.MaxCameras(), MaxImages: w.MaxImages(), MaxTokens: w.MaxTokens, SearchCameras: w.Search}
	for _, names := range [][]string{w.Sizes, w.MultiImageSizes} {
		for _, name := range names {
			if s, err := protocol.LookupImageSize(name); err == nil {
				n.MaxWidth = max(n.MaxWidth, s.Width)
				n.MaxHeight = max(n.MaxHeight, s.Height)
			}
		}
	}
	for _, pc := range w.Plan() {
		s, err := protocol.LookupImageSize(pc.Size)
		if err != nil {
			continue
		}
		sh := Shape{Images: pc.Images, Width: s.Width, Height: s.Height}
		if !slices.Contains(n.Shapes, sh) {
			n.Shapes = append(n.Shapes, sh)
		}
	}
	return n
}

// normalized fills zero needs with safe defaults: one camera, one image of
// the largest size of the method, 128 tokens.
func (n Needs) normalized() Needs {
	sizes := protocol.ImageSizes()
	largest := sizes[len(sizes)-1]
	n.MaxCameras = min(max(n.MaxCameras, 1), protocol.MaxCameraLevel)
	n.SearchCameras = min(max(n.SearchCameras, 0), protocol.MaxCameraLevel)
	n.MaxImages = min(max(n.MaxImages, 1), protocol.MaxImagesInRequest)
	if n.MaxTokens <= 0 {
		n.MaxTokens = 128
	}
	n.MaxTokens = min(n.MaxTokens, protocol.MaxTokensLimit)
	if n.MaxWidth <= 0 || n.MaxHeight <= 0 {
		n.MaxWidth, n.MaxHeight = largest.Width, largest.Height
	}
	n.MaxWidth = min(n.MaxWidth, 16384)
	n.MaxHeight = min(n.MaxHeight, 16384)
	var shapes []Shape
	for _, s := range n.Shapes {
		// Within the maxima, as the maxima are normalized.
		s.Images = min(max(s.Images, 1), n.MaxImages)
		s.Width, s.Height = min(max(s.Width, 1), n.MaxWidth), min(max(s.Height, 1), n.MaxHeight)
		shapes = append(shapes, s)
	}
	n.Shapes = shapes
	return n
}

// Endpoint is where the load generator sends its requests.
type Endpoint struct {
	BaseURL string // ".../v1"
	Model   string // the "model" field of each request
	// ExtraBody is merged into each request body; the caller sets it
	// (llama.cpp's "cache_prompt": false), adapters leave it nil.
	ExtraBody map[string]any
	// APIKey, when set, goes in an "Authorization: Bearer" header.
	APIKey string `json:"-"`
}

// Env is what the agent lends every engine.
type Env struct {
	// ModelRoots are the only directories model files may come from.
	ModelRoots []string
	// LogDir receives one log file per engine start (stdout and stderr).
	LogDir string
	// SysRoot is "/" on a device; tests point it at a fixture tree.
	SysRoot string
	Log     zerolog.Logger
	// Getenv is optional; it defaults to os.Getenv.
	Getenv func(string) string

	// stopGrace is the time between SIGTERM and SIGKILL (default 10 s);
	// pollEvery is the readiness poll interval (default 250 ms);
	// probeTimeout bounds one readiness request (default 2 s). Tests shorten them.
	stopGrace    time.Duration
	pollEvery    time.Duration
	probeTimeout time.Duration
}

// Engine is one deployment's serving engine.
type Engine interface {
	// Start starts the engine (unless external), waits until it really
	// answers, and records its version. On failure the engine is stopped
	// and the error (an *Error where the engine itself failed) carries the log tail.
	Start(ctx context.Context, needs Needs) (Endpoint, error)
	// Exited receives once if the engine ends while it should be running
	// (crash, out of memory); never for an external engine.
	Exited() <-chan error
	// Info records how the engine ran.
	Info() protocol.EngineInfo
	// LogTail is the last n lines of the engine's log.
	LogTail(n int) string
	// Stop ends the engine: SIGTERM to its process group, a grace period,
	// then SIGKILL. It may be called more than once.
	Stop(ctx context.Context) error
}

// New validates cfg and returns its adapter; nothing starts until Start.
func New(cfg Config, env Env) (Engine, error) {
	r, err := cfg.resolve(env)
	if err != nil {
		return nil, fmt.Errorf("engine %s: %w", cfg.Kind, err)
	}
	env.SysRoot = devicefacts.SysRootOr(env.SysRoot)
	if env.stopGrace <= 0 {
		env.stopGrace = 10 * time.Second
	}
	if env.probeTimeout <= 0 {
		env.probeTimeout = defaultProbeTimeout
	}
	if env.pollEvery <= 0 {
		env.pollEvery = 250 * time.Millisecond
	}
	return r.kind.newEngine(r, env), nil
}
