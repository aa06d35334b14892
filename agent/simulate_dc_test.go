package agent_test

import (
	"slices"
	"testing"

	"github.com/vlmfleet/vlmfleet/agent"
)

// A data-center GPU is a simulated device whose deployments are its
// published configurations, one per tensor-parallel size, each with an id
// of its own.
func TestSimulatedDataCenterDeployments(t *testing.T) {
	if !slices.Contains(agent.SimulatedDevices(), "A100-SXM4-80GB") {
		t.Fatalf("simulated devices %v: no A100-SXM4-80GB", agent.SimulatedDevices())
	}
	deps, err := agent.SimulatedDeployments("A100-SXM4-80GB", 100, "Llama-3.2-90B-Vision-Instruct")
	if err != nil {
		t.Fatal(err)
	}
	var tps []int
	ids := map[string]bool{}
	for _, d := range deps {
		tps = append(tps, d.Engine.TensorParallelSize)
		ids[d.ID] = true
	}
	if !slices.Equal(tps, []int{4, 8}) || len(ids) != 2 {
		t.Errorf("deployments %+v: want TP 4 and 8 with distinct ids", deps)
	}
}
