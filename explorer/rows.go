package explorer

import (
	"fmt"
	"math"
	"net/url"
	"sort"
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

// DefaultQuery is the page's default view: 720p, one camera, one image, 3 s.
func DefaultQuery() Query {
	return Query{Size: DefaultSize, Cameras: DefaultCameras, Images: DefaultImages, Target: DefaultTarget}
}

// Normalize checks q, naming the field and what is allowed, and writes the
// size as the method spells it ("2k" becomes "2K").
func (q *Query) Normalize() error {
	s, err := protocol.LookupImageSize(q.Size)
	if err != nil {
		return fmt.Errorf("size: %q is not one of %s", q.Size, strings.Join(sizeNames(), ", "))
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

// ParseQuery reads ?size=720p&cameras=1&images=1&target=3&every=5&statistic=p90;
// a missing parameter takes its default, an unknown or repeated one is an
// error.
func ParseQuery(v url.Values) (Query, error) {
	q := DefaultQuery()
	names := make([]string, 0, len(v))
	for name := range v {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		vals := v[name]
		if len(vals) != 1 {
			return q, fmt.Errorf("%s: given %d times, want once", name, len(vals))
		}
		val := strings.TrimSpace(vals[0])
		switch name {
		case "size":
			q.Size = val
		case "cameras", "images":
			n, err := strconv.Atoi(val)
			if err != nil {
				return q, fmt.Errorf("%s: %q is not a whole number", name, val)
			}
			if name == "cameras" {
				q.Cameras = n
			} else {
				q.Images = n
			}
		case "target", "every":
			t, err := strconv.ParseFloat(val, 64)
			if err != nil {
				return q, fmt.Errorf("%s: %q is not a number of seconds", name, val)
			}
			if name == "target" {
				q.Target = t
			} else {
				q.Interval = t
			}
		case "statistic":
			q.Statistic = val
		default:
			return q, fmt.Errorf("unknown parameter %q: allowed are size (%s), cameras, images, target, every (seconds between frames) and statistic (mean, p90, p95)", name, strings.Join(sizeNames(), ", "))
		}
	}
	return q, q.Normalize()
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

// MaxRowsLimit bounds ?limit=: a page, not the whole table (which is
// what leaving the limit out asks for).
const MaxRowsLimit = 1000

// Page is the part of the rows asked for: from Offset, at most Limit rows
// (0: all of them).
type Page struct {
	Offset int
	Limit  int
}

// Cut keeps the page's rows of res, and says how many there were.
func (p Page) Cut(res RowsResponse) RowsResponse {
	res.Total, res.Offset, res.Limit = len(res.Rows), p.Offset, p.Limit
	rows := res.Rows[min(p.Offset, len(res.Rows)):]
	if p.Limit > 0 && len(rows) > p.Limit {
		rows = rows[:p.Limit]
	}
	res.Rows = rows
	return res
}

// RowsRequest is what GET /api/explorer/rows asks for: the table at
// Query, the page of it and, where any cost input was given, the cost
// inputs (those left out at DefaultCost).
type RowsRequest struct {
	Query Query
	Page  Page
	Cost  *Cost
}

// ParseRowsQuery reads GET /api/explorer/rows's parameters: a Query
// (ParseQuery), the page, ?offset=N&limit=N, and the cost inputs under the
// names of the page's link, ?price=&months=&kwh=&cur=.
func ParseRowsQuery(v url.Values) (RowsRequest, error) {
	var req RowsRequest
	rest, cost, err := parseCostParams(v)
	if err != nil {
		return req, err
	}
	req.Cost = cost
	for _, name := range []string{"offset", "limit"} {
		vals, given := rest[name]
		if !given {
			continue
		}
		delete(rest, name)
		if len(vals) != 1 {
			return req, fmt.Errorf("%s: given %d times, want once", name, len(vals))
		}
		val := strings.TrimSpace(vals[0])
		n, err := strconv.Atoi(val)
		switch {
		case name == "offset" && (err != nil || n < 0):
			return req, fmt.Errorf("offset: %q, want a whole number 0 or more (the rows to skip)", val)
		case name == "limit" && (err != nil || n < 1 || n > MaxRowsLimit):
			return req, fmt.Errorf("limit: %q, want a whole number 1..%d (leave it out for every row)", val, MaxRowsLimit)
		case name == "offset":
			req.Page.Offset = n
		default:
			req.Page.Limit = n
		}
	}
	req.Query, err = ParseQuery(rest)
	if err != nil && strings.HasPrefix(err.Error(), "unknown parameter") {
		err = fmt.Errorf("%w; and offset, limit (a page of the rows), %s", err, costParamsText)
	}
	return req, err
}

// Answer is the table asked for, read from ds.
func (req RowsRequest) Answer(ds Dataset) RowsResponse {
	res := req.Page.Cut(Select(ds, req.Query))
	if req.Cost != nil {
		res = res.WithCost(*req.Cost)
	}
	return res
}

// Select reads ds at q (normalized): only rows measured at (size, cameras,
// interval), as the page shows them, in the dataset's order.
func Select(ds Dataset, q Query) RowsResponse {
	out := RowsResponse{Query: q, Rows: []RowView{}}
	for _, r := range ds.Rows {
		// As on the page: the rows are those measured at the selected size
		// and cameras; Images per Camera is an assumption that recomputes
		// the figures and leaves the rows in place.
		if !measuredAt(r.Points, q.Size, q.Cameras, q.Interval) {
			continue
		}
		out.Rows = append(out.Rows, rowViewAt(r, q))
	}
	out.Total = len(out.Rows)
	return out
}

// rowViewAt is one row read at q.
func rowViewAt(r Row, q Query) RowView {
	j := q.Judgement()
	p, ok := FindPointAt(r.Points, q.Size, q.Images, q.Cameras, q.Interval)
	if !ok && q.Images > 1 {
		// Several images per request were measured with one camera
		// only: the figures are read there, as on the page.
		p, ok = FindPointAt(r.Points, q.Size, q.Images, 1, q.Interval)
	}
	max, plus := MaxCamerasJudged(r.Points, q.Size, q.Images, q.Interval, j)
	known := Judgeable(r.Points, q.Size, q.Images, q.Interval, j)
	label := MaxCamerasLabel(max, plus)
	switch {
	case !ok:
		// Not measured is not "0": 0 means that not even one camera passed.
		label = "-"
	case !known:
		label = "n/a"
	}
	// The sentences judge as the table does: a row read by p90 is not
	// explained by its mean.
	expl := r.Explanation
	if expl == nil || !explainsAtDefault(q) {
		expl = ExplainAt(r, q)
	}
	v := RowView{
		RowConfig: r.RowConfig,
		RunID:     r.Run.ID,
		Completed: p.Completed, Failed: p.Failed,
		MaxCameras: max, Plus: plus, MaxCamerasLabel: label,
		Measured:    ok,
		Pass:        ok && known && PassesJudged(p, j),
		Explanation: expl,
		NotJudged:   ok && !known,
		Search:      Searched(r.Points, q.Size, q.Images, q.Interval),
		Sustained:   SustainedAt(r.Points, q.Size, q.Images, q.Interval),
		FramesDue:   p.FramesDue, FramesDropped: p.FramesDropped,
	}
	if _, above := FindPointAt(r.Points, q.Size, q.Images, max+1, q.Interval); v.Search && max > 0 && above {
		v.Exact = true
	}
	if p.Completed > 0 {
		v.TTFT, v.TTFTP90, v.TPS = &p.TTFT, &p.TTFTP90, &p.TPS
		v.TPSUnmeasured = p.TPSUnmeasured
	} else if ok {
		v.Error = p.Error
	}
	if e, has := EnergyAt(r.Points, q.Size, q.Images, q.Interval, max); known && has {
		v.PowerAtMaxW, v.JoulesAtMax, v.AboveIdleAtMax = &e.PowerW, e.JoulesPerAnswer, e.AboveIdle
		v.WattsPerCamera, v.PowerSource = &e.WattsPerCamera, e.Source
	}
	if s, judged := j.Judged(p.Figures()); ok && judged && j.Stat() != protocol.StatisticMean {
		v.Judged = &s
	}
	return v
}

// measuredAt reports whether any point was measured at size, cameras and
// interval, whatever its image count.
func measuredAt(points []Point, size string, cameras int, interval float64) bool {
	for _, p := range points {
		if p.Size == size && p.Cameras == cameras && p.FrameIntervalSec == interval {
			return true
		}
	}
	return false
}
