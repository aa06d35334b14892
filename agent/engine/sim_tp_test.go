package engine

import (
	"testing"
)

// A data-center device is simulated at the deployment's tensor-parallel
// size, recorded in the engine's info (and so in the run) with its GPU;
// a size whose GPUs cannot hold the model is refused, naming the least
// that can.
func TestSimTensorParallel(t *testing.T) {
	env := newTestEnv(t)
	c := Config{Kind: KindSim, SimDevice: "A100-SXM4-80GB", SimModel: "Llama-3.2-90B-Vision-Instruct",
		SimQuantization: "BF16", SimSpeedup: 100, TensorParallelSize: 8}
	e, err := New(c, env.Env)
	if err != nil {
		t.Fatal(err)
	}
	info := e.Info()
	if info.Props["tensor_parallel_size"] != "8" || info.Props["gpu"] != "A100-SXM4-80GB" {
		t.Errorf("props %v, want tensor_parallel_size 8 and gpu A100-SXM4-80GB", info.Props)
	}
	if sim := SimulationOf(info); !sim.Simulated || sim.GPUCount != 8 || sim.Device != "A100-SXM4-80GB" {
		t.Errorf("simulation %+v, want 8 A100-SXM4-80GB", sim)
	}
	c.TensorParallelSize = 0
	_, err = New(c, env.Env)
	if err == nil {
		t.Fatal("90B in BF16 on one 80 GB GPU: accepted")
	}
	mustContain(t, "error", err.Error(), "tensor_parallel_size", "needs at least 4")
}
