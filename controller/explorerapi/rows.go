package explorerapi

import (
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// Query is what the table is read at: the page's selectors, its target and
// its images-per-camera assumption, how the cameras send and the statistic
// a level is judged by.
type Query struct {
	Size    string  `json:"size"`
	Cameras int     `json:"cameras"`
	Images  int     `json:"images"`
	Target  float64 `json:"target"`
	// Interval is the frame clock the cameras send on, seconds; 0 is back
	// to back, as published.
	Interval float64 `json:"frame_interval_sec,omitempty"`
	// Statistic is protocol.StatisticMean, P90 or P95; empty is the mean.
	Statistic string `json:"statistic,omitempty"`
}

// Judgement is what a level is judged by at q.
func (q Query) Judgement() protocol.Judgement {
	return protocol.Judgement{Statistic: q.Statistic, TargetSec: q.Target}
}

// MaxTargetSec bounds the target; a longer wait is a typo.
const MaxTargetSec = 3600

// Normalize checks q, naming the field and what is allowed, and writes the
// size as the method spells it ("2k" becomes "2K").
func (q *Query) Normalize() error {
	s, err := protocol.LookupImageSize(q.Size)
	if err != nil {
		return fmt.Errorf("size: %q is not one of %s", q.Size, strings.Join(SizeNames(), ", "))
	}
	q.Size = s.Name
	if q.Cameras < 1 || q.Cameras > protocol.MaxCameraLevel {
		return fmt.Errorf("cameras: %d, want a whole number 1..%d", q.Cameras, protocol.MaxCameraLevel)
	}
	if q.Images < 1 || q.Images > protocol.MaxImagesInRequest {
		return fmt.Errorf("images: %d, want a whole number 1..%d (the method measures 1, 3 and 5)", q.Images, protocol.MaxImagesInRequest)
	}
	if math.IsNaN(q.Target) || q.Target <= 0 || q.Target > MaxTargetSec {
		return fmt.Errorf("target: %g, want seconds above 0 and at most %d", q.Target, MaxTargetSec)
	}
	if t := q.Interval; math.IsNaN(t) || math.IsInf(t, 0) || t < 0 || t > protocol.MaxFrameIntervalSec {
		return fmt.Errorf("every: %g, want 0 (back to back) or the seconds between a camera's frames, at most %d", t, protocol.MaxFrameIntervalSec)
	}
	if q.Statistic != "" {
		st, err := protocol.ParseStatistic(q.Statistic)
		if err != nil {
			return fmt.Errorf("statistic: %q, want mean, p90 or p95", q.Statistic)
		}
		q.Statistic = st
	}
	return nil
}

// Values is q as ParseQuery reads it: every field that is not at its
// zero value, so that ParseQuery(q.Values()) is q.
func (q Query) Values() url.Values {
	v := url.Values{
		"size": {q.Size}, "cameras": {strconv.Itoa(q.Cameras)}, "images": {strconv.Itoa(q.Images)},
		"target": {strconv.FormatFloat(q.Target, 'g', -1, 64)},
	}
	if q.Interval != 0 {
		v.Set("every", strconv.FormatFloat(q.Interval, 'g', -1, 64))
	}
	if q.Statistic != "" {
		v.Set("statistic", q.Statistic)
	}
	return v
}

// RowView is one row read at a Query: its figures at (size, images,
// cameras), and Max Cameras at (size, images, target).
type RowView struct {
	RowConfig
	// RunID is the run the row shows (Row.Run), so that a sweep's page
	// finds the rows of its runs.
	RunID string `json:"run_id,omitempty"`

	// TTFT, TTFTP90 and TPS are null when every request at the selected
	// combination failed (Completed 0): the row then fails the target.
	TTFT      *float64 `json:"ttft"`
	TTFTP90   *float64 `json:"ttft_p90"`
	TPS       *float64 `json:"tps"`
	Completed int      `json:"completed"`
	Failed    int      `json:"failed"`

	MaxCameras      int    `json:"max_cameras"`
	Plus            bool   `json:"plus"`
	MaxCamerasLabel string `json:"max_cameras_label"`
	// Measured is false when the row has no measurement with the selected
	// images per camera (it is shown, as on the page, with no figures).
	Measured bool `json:"measured"`
	// Pass is whether the response time at the selected cameras meets the target.
	Pass bool `json:"pass"`
	// Explanation is the row in plain language at the query's size,
	// images per camera and judgement (ExplainAt).
	Explanation []string `json:"explanation"`
	// Error is why every request at the selection failed (Point.Error).
	Error string `json:"error,omitempty"`

	// Judged is the response time the statistic reads at the selection
	// (p90 or p95 over every answer due), when it is not the mean.
	Judged *float64 `json:"judged_ttft,omitempty"`
	// NotJudged says that the statistic is not known for the row (a
	// published row imported with its means only): Max Cameras reads
	// "n/a" and the row neither passes nor fails.
	NotJudged bool `json:"not_judged,omitempty"`
	// Search says that a search chose levels at the selection; Exact that
	// it measured the level above Max Cameras too, which did not keep up.
	Search bool `json:"search,omitempty"`
	Exact  bool `json:"exact,omitempty"`
	// Sustained says that Max Cameras read levels measured with cameras
	// that keep sending; otherwise one round per level, as published.
	Sustained bool `json:"sustained,omitempty"`
	// FramesDue and FramesDropped are the frames of a paced selection.
	FramesDue     int `json:"frames_due,omitempty"`
	FramesDropped int `json:"frames_dropped,omitempty"`
	// TPSUnmeasured: TPS could not be measured at the selection ("n/a").
	TPSUnmeasured bool `json:"tps_na,omitempty"`

	// PowerAtMaxW, JoulesAtMax and WattsPerCamera are the draw at Max
	// Cameras (EnergyAt), and PowerSource what it covers; absent where no
	// level kept up or it has no power samples.
	PowerAtMaxW    *float64 `json:"power_at_max_w,omitempty"`
	JoulesAtMax    *float64 `json:"joules_per_answer_at_max,omitempty"`
	AboveIdleAtMax *float64 `json:"above_idle_joules_per_answer_at_max,omitempty"`
	WattsPerCamera *float64 `json:"watts_per_camera,omitempty"`
	PowerSource    string   `json:"power_source,omitempty"`
	// CostPerCameraMonth is the cost at RowsResponse.Cost, where the draw
	// at Max Cameras is known; absent where it is not, as on the page.
	CostPerCameraMonth *float64 `json:"cost_per_camera_month,omitempty"`
}

// RowsResponse is GET /api/explorer/rows and `vlmfleet explorer table --json`.
type RowsResponse struct {
	Query
	// Total counts the rows at the query; Rows holds those from Offset on,
	// at most Limit of them when a limit was asked (0: all).
	Total  int `json:"total"`
	Offset int `json:"offset"`
	Limit  int `json:"limit,omitempty"`
	// Cost is what the rows' costs are read at (WithCost); nil, and left
	// out of the JSON, where no cost was asked for, so that a script that
	// does not ask gets no example prices it could take for real ones.
	Cost *Cost     `json:"cost,omitempty"`
	Rows []RowView `json:"rows"`
}

// SizeNames are the image sizes in display order, as Dataset.Sizes and
// the errors that name the sizes allowed list them.
func SizeNames() []string {
	var out []string
	for _, s := range protocol.ImageSizes() {
		out = append(out, s.Name)
	}
	return out
}
