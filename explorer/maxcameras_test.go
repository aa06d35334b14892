package explorer

import (
	"encoding/json"
	"os"
	"testing"
)

// vector is one case of testdata/maxcameras_vectors.json, which the page's
// JavaScript tests read too.
type vector struct {
	Name   string  `json:"name"`
	Size   string  `json:"size"`
	Images int     `json:"images"`
	Target float64 `json:"target"`
	Points []Point `json:"points"`
	Want   struct {
		Max  int  `json:"max"`
		Plus bool `json:"plus"`
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
		max, plus := MaxCameras(v.Points, v.Size, v.Images, v.Target)
		if max != v.Want.Max || plus != v.Want.Plus {
			t.Errorf("%s: got %s, want %s", v.Name, MaxCamerasLabel(max, plus), MaxCamerasLabel(v.Want.Max, v.Want.Plus))
		}
	}
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
