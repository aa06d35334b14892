package explorerapi

import (
	"time"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// Dataset is what the page and `vlmfleet explorer export` receive: every row
// with every measured point. The page computes Max Cameras from the points
// itself so that the target acts without a round trip.
type Dataset struct {
	Schema    int       `json:"schema"`
	Generated time.Time `json:"generated"`
	// Sizes lists the image sizes in display order (480p, 720p, 1080p, 2K).
	Sizes []string `json:"sizes"`
	// SimulatedRows counts rows that come from simulated runs (the page shows a banner).
	SimulatedRows int   `json:"simulated_rows"`
	Rows          []Row `json:"rows"`
}

// RowConfig is what a row stands for, as a Row and a RowView show it.
type RowConfig struct {
	// ID is stable across runs of the same configuration.
	ID           string  `json:"id"`
	Model        string  `json:"model"`
	ParamsB      float64 `json:"params_b"`
	Quantization string  `json:"quantization"`
	Engine       string  `json:"engine"`
	Device       string  `json:"device"`
	Simulated    bool    `json:"simulated"`
	// PowerMode is the power setting the row was measured in, as shown
	// ("15W", "300 W limit"): part of the row's identity; empty when the
	// runs do not say.
	PowerMode string `json:"power_mode,omitempty"`
	// Source is the source of the run the row shows.
	Source string `json:"source"`
}

// Row is one deployment configuration: model, parameters, quantization,
// engine and device, showing its latest completed run, with the levels
// only its earlier runs measured (Point.Run).
type Row struct {
	RowConfig

	Run       RunMeta   `json:"run"`
	OtherRuns []RunMeta `json:"other_runs,omitempty"`
	// Regression is set when Run got worse than OtherRuns[0] (only where the
	// explorer can load per-request records: served by a controller).
	Regression *Regression `json:"regression,omitempty"`

	// Explanation is the row in plain language at the default settings
	// (720p, one image per camera, 3 s target), in the seed's sentences.
	Explanation []string `json:"explanation"`

	Points []Point `json:"points"`
}

// RunMeta describes the run a row shows, for the expanded row.
type RunMeta struct {
	ID            string    `json:"id"`
	Date          time.Time `json:"date"`
	Source        string    `json:"source"`
	Origin        string    `json:"origin,omitempty"`
	Simulated     bool      `json:"simulated"`
	EngineVersion string    `json:"engine_version,omitempty"`
	EngineCommand []string  `json:"engine_command,omitempty"`
	// Platform is the JetPack/L4T release on a Jetson, the driver and CUDA on a dGPU.
	Platform  string `json:"platform,omitempty"`
	PowerMode string `json:"power_mode,omitempty"`
	// Telemetry is a one-line summary ("GPU 87% mean, 23.1 W mean, 61 °C max").
	Telemetry string `json:"telemetry,omitempty"`
	Requests  string `json:"requests,omitempty"`
	// Warnings are the run's own (protocol.Run.Warnings): what makes its
	// figures doubtful although it ran.
	Warnings []string `json:"warnings,omitempty"`
}

// Point is the measurement at one (size, images, cameras, frame interval).
type Point struct {
	Size      string  `json:"size"`
	Images    int     `json:"images"`
	Cameras   int     `json:"cameras"`
	TTFT      float64 `json:"ttft"` // mean seconds
	TTFTP90   float64 `json:"ttft_p90"`
	TPS       float64 `json:"tps"` // mean tok/s per camera
	Completed int     `json:"completed"`
	Failed    int     `json:"failed"`
	// Throughput is aggregate output tokens per second.
	Throughput float64 `json:"throughput"`
	// Error is why every request failed (Completed 0): the most frequent
	// error, as the run recorded it ("HTTP 400: ... exceeds largest input").
	Error string `json:"error,omitempty"`

	// FrameIntervalSec is the frame clock the cameras sent on, seconds; 0
	// is back to back, as published.
	FrameIntervalSec float64 `json:"frame_interval_sec,omitempty"`
	// Search says that a search for the exact Max Cameras chose the level.
	Search bool `json:"search,omitempty"`
	// Load is how a back-to-back level's cameras sent: empty for one
	// round, as published; protocol.LoadSustained for cameras that kept
	// sending. Where a selection has sustained levels, Max Cameras reads
	// them alone.
	Load string `json:"load,omitempty"`
	// Run is the earlier run the level comes from, where the row's latest
	// run (Row.Run) did not measure it; empty for the latest run's levels.
	Run string `json:"run,omitempty"`
	// FramesDue, FramesSent and FramesDropped are a paced level's frames
	// (protocol.Pacing): a dropped frame is one a camera skipped because
	// its previous answer had not finished.
	FramesDue     int `json:"frames_due,omitempty"`
	FramesSent    int `json:"frames_sent,omitempty"`
	FramesDropped int `json:"frames_dropped,omitempty"`
	// Tail is what judging by p90 or p95 reads; nil where it is not known
	// (a published row imported with its means only).
	Tail *protocol.TTFTTail `json:"ttft_tail,omitempty"`
	// TPSUnmeasured says that no token came after a first token's read, so
	// the decode rate could not be measured: TPS 0 would misstate it.
	TPSUnmeasured bool `json:"tps_na,omitempty"`

	// PowerW is the mean power over the level's measured window, watts;
	// nil where it has no power samples (said so, never shown as 0).
	// PowerSource is protocol.PowerSource*: what the watts cover ("gpu" is
	// the GPU's draw alone).
	PowerW      *float64 `json:"power_w,omitempty"`
	PowerSource string   `json:"power_source,omitempty"`
	// JoulesPerAnswer is PowerW x the window / the answers completed; nil
	// where no answer completed. AboveIdleJoulesPerAnswer is the same above
	// the device's idle draw, where the run sampled it.
	JoulesPerAnswer          *float64 `json:"joules_per_answer,omitempty"`
	AboveIdleJoulesPerAnswer *float64 `json:"above_idle_joules_per_answer,omitempty"`
}

// Regression marks a row whose latest run got worse than the run of the
// same configuration before it.
type Regression struct {
	// Than is the earlier run; Date is when it finished.
	Than string    `json:"than"`
	Date time.Time `json:"date"`
	// Worse counts the metrics of combinations that got worse.
	Worse int `json:"worse"`
	// Compare is the compare page of the two runs.
	Compare string `json:"compare"`
}

// Key is the level p measures.
func (p Point) Key() protocol.ComboKey {
	return protocol.ComboKey{Size: p.Size, Images: p.Images, Cameras: p.Cameras, FrameIntervalSec: p.FrameIntervalSec, Load: p.Load}
}

// Paced says that the cameras sent on a frame clock.
func (p Point) Paced() bool { return p.FrameIntervalSec > 0 }

// Sustained says that the level's cameras kept sending.
func (p Point) Sustained() bool { return p.Load == protocol.LoadSustained }

// LoadName names the load beside the level's figures: "sustained", "one
// round, as published", or "" on a frame clock.
func (p Point) LoadName() string {
	return protocol.ComboKey{FrameIntervalSec: p.FrameIntervalSec, Load: p.Load}.LoadName()
}

// Figures is what judging the point reads.
func (p Point) Figures() protocol.LevelFigures {
	return protocol.LevelFigures{Completed: p.Completed, Failed: p.Failed, MeanTTFT: p.TTFT, Tail: p.Tail,
		Paced: p.Paced(), Dropped: p.FramesDropped}
}
