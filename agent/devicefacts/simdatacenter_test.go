package devicefacts

import "testing"

// A simulated data-center GPU is a node of eight boards as nvidia-smi
// names them; a deployment's tensor-parallel size sets how many serve it.
// An edge device keeps its one board whatever the count.
func TestSimulatedDataCenterGPUs(t *testing.T) {
	for _, c := range []struct {
		device, smi string
		count, want int
	}{
		{"A100-SXM4-80GB", "NVIDIA A100-SXM4-80GB", 0, SimNodeGPUs},
		{"H100-HBM3-80GB", "NVIDIA H100 80GB HBM3", 4, 4},
		{"L40S", "NVIDIA L40S", 1, 1},
		{"A10G", "NVIDIA A10G", 4, 4},
		{"RTX PRO 6000", "NVIDIA RTX PRO 6000 Blackwell Workstation Edition", 4, 1},
	} {
		f := Simulated(c.device)
		if c.count > 0 {
			f = SimulatedGPUs(c.device, c.count)
		}
		if f.Name != c.device || len(f.GPUs) != c.want {
			t.Fatalf("%s ×%d: name %q, %d GPUs; want %d", c.device, c.count, f.Name, len(f.GPUs), c.want)
		}
		seen := map[string]bool{}
		for i, g := range f.GPUs {
			if g.Name != c.smi || g.Index != i || g.MemoryMB == 0 || seen[g.UUID] {
				t.Errorf("%s: GPU %d %+v", c.device, i, g)
			}
			seen[g.UUID] = true
		}
	}
}
