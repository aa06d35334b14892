package explorer

import (
	"testing"

	"github.com/vlmfleet/vlmfleet/internal/testutil/energyvectors"
)

// energyVector is one case of testdata/energy_vectors.json, with the
// inputs the Go formulas take.
type energyVector struct {
	energyvectors.Case
	Size     string  `json:"size"`
	Images   int     `json:"images"`
	Interval float64 `json:"interval"`
	Max      int     `json:"max"`
	Points   []Point `json:"points"`
	Cost     Cost    `json:"cost"`
}

func readEnergyVectors(t *testing.T) []energyVector {
	t.Helper()
	return energyvectors.Read[energyVector](t, "testdata/energy_vectors.json")
}

// Every shared vector: EnergyAt finds the draw at Max Cameras (or says
// there is none), and CostPerCameraMonth and the page's number formats
// give the expected figures exactly (the same operations in the same
// order give the same float).
func TestSharedEnergyVectors(t *testing.T) {
	for _, v := range readEnergyVectors(t) {
		e, ok := EnergyAt(v.Points, v.Size, v.Images, v.Interval, v.Max)
		w := v.Want
		if ok != w.Found {
			t.Errorf("%s: found %v, want %v", v.Name, ok, w.Found)
			continue
		}
		if !ok {
			continue
		}
		if e.PowerW != w.PowerW || e.WattsPerCamera != w.WattsPerCamera || !sameJoules(e.JoulesPerAnswer, w.JoulesPerAnswer) {
			t.Errorf("%s: %g W, %g W per camera, J %v; want %g, %g, %v", v.Name, e.PowerW, e.WattsPerCamera, e.JoulesPerAnswer, w.PowerW, w.WattsPerCamera, w.JoulesPerAnswer)
		}
		cost := CostPerCameraMonth(v.Cost, e.PowerW, v.Max)
		if cost != w.CostPerCameraMonth {
			t.Errorf("%s: cost %v, want %v", v.Name, cost, w.CostPerCameraMonth)
		}
		if got := [3]string{jsToFixed(e.PowerW, 1), jsToFixed(e.WattsPerCamera, 2), jsToFixed(cost, 2)}; got != [3]string{w.PowerText, w.WattsText, w.CostText} {
			t.Errorf("%s: shown as %q, want %q", v.Name, got, [3]string{w.PowerText, w.WattsText, w.CostText})
		}
	}
}

func sameJoules(a, b *float64) bool {
	return a == nil && b == nil || a != nil && b != nil && *a == *b
}
