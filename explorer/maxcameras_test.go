package explorer

import (
	"encoding/json"
	"os"
	"slices"
	"testing"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// vector is one case of testdata/maxcameras_vectors.json, which the page's
// JavaScript tests read too.
type vector struct {
	Name   string  `json:"name"`
	Size   string  `json:"size"`
	Images int     `json:"images"`
	Target float64 `json:"target"`
	// Statistic is mean, p90 or p95 (empty: the mean); Interval the frame
	// clock (0: back to back).
	Statistic string  `json:"statistic"`
	Interval  float64 `json:"interval"`
	Points    []Point `json:"points"`
	Want      struct {
		Max  int  `json:"max"`
		Plus bool `json:"plus"`
		// Unknown: the statistic cannot be judged (no tail).
		Unknown bool `json:"unknown"`
	} `json:"want"`
}

func TestMaxCamerasVectors(t *testing.T) {
	data, err := os.ReadFile("testdata/maxcameras_vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var vs []vector
	if err := json.Unmarshal(data, &vs); err != nil {
		t.Fatalf("maxcameras_vectors.json: %v", err)
	}
	if len(vs) < 15 {
		t.Fatalf("only %d vectors", len(vs))
	}
	names := map[string]bool{}
	for _, v := range vs {
		if names[v.Name] {
			t.Errorf("vector name %q twice", v.Name)
		}
		names[v.Name] = true
		j := protocol.Judgement{Statistic: v.Statistic, TargetSec: v.Target}
		max, plus := MaxCamerasJudged(v.Points, v.Size, v.Images, v.Interval, j)
		if max != v.Want.Max || plus != v.Want.Plus {
			t.Errorf("%s: got %s, want %s", v.Name, MaxCamerasLabel(max, plus), MaxCamerasLabel(v.Want.Max, v.Want.Plus))
		}
		if known := Judgeable(v.Points, v.Size, v.Images, v.Interval, j); known == v.Want.Unknown {
			t.Errorf("%s: judgeable %v, want %v", v.Name, known, !v.Want.Unknown)
		}
		if j.Stat() == protocol.StatisticMean && v.Interval == 0 {
			// The published form reads the same.
			if m, p := MaxCameras(v.Points, v.Size, v.Images, v.Target); m != max || p != plus {
				t.Errorf("%s: MaxCameras %s, MaxCamerasJudged %s", v.Name, MaxCamerasLabel(m, p), MaxCamerasLabel(max, plus))
			}
		}
	}
	for _, kind := range []string{"p90", "p95", "paced", "search", "unknown"} {
		if !slices.ContainsFunc(vs, func(v vector) bool { return vectorKind(v, kind) }) {
			t.Errorf("no vector of kind %s", kind)
		}
	}
}

// vectorKind says whether v exercises kind, so that the shared vectors
// keep covering each rule.
func vectorKind(v vector, kind string) bool {
	switch kind {
	case "paced":
		return v.Interval > 0
	case "search":
		return slices.ContainsFunc(v.Points, func(p Point) bool { return p.Search })
	case "unknown":
		return v.Want.Unknown
	}
	return v.Statistic == kind
}

func TestMaxCamerasLabel(t *testing.T) {
	for _, c := range []struct {
		max  int
		plus bool
		want string
	}{{0, false, "0"}, {2, false, "2"}, {8, true, "8+"}, {16, true, "16+"}} {
		if got := MaxCamerasLabel(c.max, c.plus); got != c.want {
			t.Errorf("%d %v: %q, want %q", c.max, c.plus, got, c.want)
		}
	}
}

func TestMeasured(t *testing.T) {
	pts := []Point{{Size: "720p", Images: 1, Cameras: 1, TTFT: 1, Completed: 8}, {Size: "720p", Images: 5, Cameras: 1, TTFT: 4, Completed: 5}}
	for _, c := range []struct {
		size   string
		images int
		want   bool
	}{{"720p", 1, true}, {"720p", 5, true}, {"720p", 3, false}, {"2K", 1, false}} {
		if got := Measured(pts, c.size, c.images); got != c.want {
			t.Errorf("Measured(%s, %d) = %v", c.size, c.images, got)
		}
	}
}
