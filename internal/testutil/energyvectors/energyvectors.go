// Package energyvectors reads explorer/testdata/energy_vectors.json: the
// cases that the explorer's Go formulas (explorer) and the page's
// JavaScript (explorer/web) are both tested against, so that the two
// cannot drift. It declares what a case expects once for both.
package energyvectors

import (
	"encoding/json"
	"os"
	"testing"
)

// Want is what a case expects: the draw at Max Cameras (or that there is
// none), the cost, and the page's texts of them.
type Want struct {
	Found              bool     `json:"found"`
	PowerW             float64  `json:"power_w"`
	JoulesPerAnswer    *float64 `json:"joules_per_answer"`
	WattsPerCamera     float64  `json:"watts_per_camera"`
	CostPerCameraMonth float64  `json:"cost_per_camera_month"`
	PowerText          string   `json:"power_text"`
	WattsText          string   `json:"watts_per_camera_text"`
	CostText           string   `json:"cost_text"`
}

// Case is a case's name and what it expects. Its inputs are the
// explorer's types; a test that needs them embeds Case beside them.
type Case struct {
	Name string `json:"name"`
	Want Want   `json:"want"`
}

// Read reads the cases at path as T (Case, or a type that embeds it),
// failing the test when the file holds none.
func Read[T any](t testing.TB, path string) []T {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("shared energy vectors: %v", err)
	}
	var vs []T
	if err := json.Unmarshal(data, &vs); err != nil || len(vs) == 0 {
		t.Fatalf("shared energy vectors %s: %v (%d cases)", path, err, len(vs))
	}
	return vs
}
