package web_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/vlmfleet/vlmfleet/internal/testutil/energyvectors"
)

// The page's energyAt and costPerCameraMonth, and its number formats, give
// every shared vector's figures exactly, as the Go formulas do.
func TestSharedEnergyVectorsInJS(t *testing.T) {
	path := filepath.Join("..", "testdata", "energy_vectors.json")
	vs := energyvectors.Read[energyvectors.Case](t, path)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := newTab(t)
	open(t, ctx, serve(t, mustJSON(t, testDataset())))
	type got struct {
		Found                     bool
		PowerW, Watts, Cost       float64
		Joules                    *float64
		PowerText, WattsText, Fee string
	}
	res := eval[[]got](t, ctx, fmt.Sprintf(`import('/static/logic.js').then(m => (%s).map(v => {
		const e = m.energyAt(v.points, v.size, v.images, v.interval || 0, v.max);
		if (!e) return {Found: false};
		const cost = m.costPerCameraMonth(v.cost.price, v.cost.months, v.cost.kwh, e.powerW, v.max);
		return {Found: true, PowerW: e.powerW, Watts: e.wattsPerCamera, Cost: cost, Joules: e.joules,
			PowerText: e.powerW.toFixed(1), WattsText: e.wattsPerCamera.toFixed(2), Fee: cost.toFixed(2)};
	}))`, raw))
	if len(res) != len(vs) {
		t.Fatalf("%d results for %d vectors", len(res), len(vs))
	}
	for i, v := range vs {
		g, w := res[i], v.Want
		if g.Found != w.Found {
			t.Errorf("%s: JS found %v, want %v", v.Name, g.Found, w.Found)
			continue
		}
		if !g.Found {
			continue
		}
		joulesSame := (g.Joules == nil) == (w.JoulesPerAnswer == nil) && (g.Joules == nil || *g.Joules == *w.JoulesPerAnswer)
		if g.PowerW != w.PowerW || g.Watts != w.WattsPerCamera || g.Cost != w.CostPerCameraMonth || !joulesSame {
			t.Errorf("%s: JS gives %g W, %g W per camera, cost %v, J %v; want %g, %g, %v, %v", v.Name, g.PowerW, g.Watts, g.Cost, g.Joules,
				w.PowerW, w.WattsPerCamera, w.CostPerCameraMonth, w.JoulesPerAnswer)
		}
		if g.PowerText != w.PowerText || g.WattsText != w.WattsText || g.Fee != w.CostText {
			t.Errorf("%s: JS shows %s W, %s W per camera, cost %s; want %s, %s, %s", v.Name, g.PowerText, g.WattsText, g.Fee, w.PowerText, w.WattsText, w.CostText)
		}
	}
	t.Logf("%d shared energy vectors pass in JS", len(vs))
}
