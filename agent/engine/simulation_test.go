package engine

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// The served model's entry decides; a single entry answers for any name; a
// speedup that is not a finite number of at least 1 reads as real time.
func TestModelListSimulation(t *testing.T) {
	cases := []struct {
		doc, model string
		sim        bool
		speedup    float64
		device     string
	}{
		{`{"data":[{"id":"m","simulated":true,"sim_speedup":25,"sim_device":"Jetson AGX Orin"}]}`, "m", true, 25, "Jetson AGX Orin"},
		{`{"data":[{"id":"other","simulated":true,"sim_speedup":4}]}`, "m", true, 4, ""},
		{`{"data":[{"id":"m"},{"id":"n","simulated":true,"sim_speedup":4}]}`, "m", false, 1, ""},
		{`{"data":[{"id":"m","simulated":true}]}`, "m", true, 1, ""},
		{`{"data":[{"id":"m","simulated":true,"sim_speedup":0.5}]}`, "m", true, 1, ""},
		{`{"object":"list","data":[{"id":"m","owned_by":"vllm","max_model_len":4096}]}`, "m", false, 1, ""},
		{`{"data":[]}`, "m", false, 1, ""},
	}
	for _, c := range cases {
		var ml modelList
		if err := json.Unmarshal([]byte(c.doc), &ml); err != nil {
			t.Fatalf("%s: %v", c.doc, err)
		}
		got := SimulationOf(protocol.EngineInfo{Kind: KindExternal, Props: listedProps(ml, c.model)})
		if got.Simulated != c.sim || got.Speedup != c.speedup || got.Device != c.device {
			t.Errorf("%s for %q: %+v; want %v, %g, %q", c.doc, c.model, got, c.sim, c.speedup, c.device)
		}
	}
	if s := SimulationOf(protocol.EngineInfo{Kind: KindSim}); !s.Simulated || s.Speedup != 1 {
		t.Errorf("the sim kind without props: %+v, want simulated in real time", s)
	}
}

func FuzzModelListSimulation(f *testing.F) {
	f.Add(`{"data":[{"id":"m","simulated":true,"sim_speedup":25}]}`)
	f.Add(`{"data":[{"id":"m","sim_speedup":1e309}]}`)
	f.Add(`{"data":null}`)
	f.Add(`[`)
	f.Fuzz(func(t *testing.T, doc string) {
		var ml modelList
		if json.Unmarshal([]byte(doc), &ml) != nil {
			return
		}
		s := SimulationOf(protocol.EngineInfo{Kind: KindExternal, Props: listedProps(ml, "m")})
		if !(s.Speedup >= 1) || math.IsInf(s.Speedup, 0) || (!s.Simulated && (s.Speedup != 1 || s.Device != "")) {
			t.Errorf("%q: %+v", doc, s)
		}
	})
}
