package simengine

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
)

// /v1/models says the engine is simulated and how much faster than the
// device it runs, so that a client can scale its times back.
func TestModelsReportSpeedup(t *testing.T) {
	p := mustLookup(t, "RTX PRO 6000", "Qwen3-VL-8B-Instruct", "Q8_0", "llama.cpp")
	for _, c := range []struct{ opt, want float64 }{{0, 1}, {1, 1}, {25, 25}} {
		ts := httptest.NewServer(New(p, Options{Speedup: c.opt}).Handler())
		resp, err := http.Get(ts.URL + "/v1/models")
		if err != nil {
			ts.Close()
			t.Fatal(err)
		}
		var list struct {
			Data []struct {
				ID         string   `json:"id"`
				Simulated  bool     `json:"simulated"`
				SimSpeedup *float64 `json:"sim_speedup"`
			} `json:"data"`
		}
		err = json.NewDecoder(resp.Body).Decode(&list)
		resp.Body.Close()
		ts.Close()
		if err != nil {
			t.Fatalf("speedup %g: decode: %v", c.opt, err)
		}
		if len(list.Data) != 1 || !list.Data[0].Simulated || list.Data[0].SimSpeedup == nil || *list.Data[0].SimSpeedup != c.want {
			t.Errorf("speedup %g: models %+v, want one simulated entry with sim_speedup %g", c.opt, list.Data, c.want)
		}
	}
}
