package explorer

import (
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/vlmfleet/vlmfleet/controller/explorerapi"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// DefaultQuery is the page's default view: 720p, one camera, one image, 3 s.
func DefaultQuery() Query {
	return Query{Size: DefaultSize, Cameras: DefaultCameras, Images: DefaultImages, Target: DefaultTarget}
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
			return q, fmt.Errorf("unknown parameter %q: allowed are size (%s), cameras, images, target, every (seconds between frames) and statistic (mean, p90, p95)", name, strings.Join(explorerapi.SizeNames(), ", "))
		}
	}
	return q, q.Normalize()
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
		res = WithCost(res, *req.Cost)
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
