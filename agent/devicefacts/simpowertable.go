package devicefacts

// SimMode is one nvpmodel mode of a simulated Jetson with the figures the
// simulator uses: what the device's /etc/nvpmodel.conf sets, and the
// hardware's maximum GPU clock where the mode leaves it uncapped. The
// table below is the one docs/engines.md ("Simulated power modes") shows
// with its sources; a test holds the two equal.
type SimMode struct {
	ID   int
	Name string
	// BudgetW is the power budget the mode is named for, watts; 0 for
	// MAXN / MAXN_SUPER, which NVIDIA publishes without one.
	BudgetW float64
	// GPUMaxFreqHz is the mode's GPU clock cap, or the hardware's maximum
	// where the mode writes -1 (no cap).
	GPUMaxFreqHz int64
	// GPUTPCs is how many of the GPU's TPCs the mode leaves powered
	// (TPC_PG_MASK): a low mode may gate half the GPU off as well as
	// lowering its clock.
	GPUTPCs int
	// EMCMaxFreqHz is the memory clock cap; 0 where the mode sets none.
	// Shown for reference: the simulator does not use it.
	EMCMaxFreqHz int64
}

// simModeTable is a simulated Jetson's modes in /etc/nvpmodel.conf's
// order, the mode the profile was published in (its reference), and the
// nvpmodel.conf the figures were read from.
type simModeTable struct {
	Modes     []SimMode
	Reference string
	Conf      string
}

const mhz = 1_000_000

// simModeTables returns the simulated Jetsons' tables, built afresh on
// each call so that no caller can change another's.
func simModeTables() map[SimProfile]simModeTable {
	return map[SimProfile]simModeTable{
		// Jetson Orin NX 16GB (P3767-0000) as JetPack 6.2 flashes it without
		// the Super configuration: the simulated facts say MAXN.
		SimOrinNX: {Conf: "nvpmodel_p3767_0000.conf", Reference: "MAXN", Modes: []SimMode{
			{ID: 0, Name: "MAXN", GPUMaxFreqHz: 918 * mhz, GPUTPCs: 4},
			{ID: 1, Name: "10W", BudgetW: 10, GPUMaxFreqHz: 612 * mhz, GPUTPCs: 2, EMCMaxFreqHz: 2133 * mhz},
			{ID: 2, Name: "15W", BudgetW: 15, GPUMaxFreqHz: 612 * mhz, GPUTPCs: 2},
			{ID: 3, Name: "25W", BudgetW: 25, GPUMaxFreqHz: 408 * mhz, GPUTPCs: 4},
		}},
		// Jetson AGX Orin Developer Kit 32GB (P3701-0000: the full 2048-core
		// GPU and 12 CPU cores of the 64GB module, not the 1792-core
		// production 32GB module P3701-0004, whose third mode is MODE_40W).
		SimAGXOrin: {Conf: "nvpmodel_p3701_0000.conf", Reference: "MAXN", Modes: []SimMode{
			{ID: 0, Name: "MAXN", GPUMaxFreqHz: 1300 * mhz, GPUTPCs: 8},
			{ID: 1, Name: "MODE_15W", BudgetW: 15, GPUMaxFreqHz: 408 * mhz, GPUTPCs: 3, EMCMaxFreqHz: 2133 * mhz},
			{ID: 2, Name: "MODE_30W", BudgetW: 30, GPUMaxFreqHz: 612 * mhz, GPUTPCs: 4},
			{ID: 3, Name: "MODE_50W", BudgetW: 50, GPUMaxFreqHz: 816 * mhz, GPUTPCs: 8},
		}},
		// Jetson Orin Nano 8GB Developer Kit with JetPack 6.2's Super
		// configuration (the simulated facts say MAXN_SUPER).
		SimOrinNano: {Conf: "nvpmodel_p3767_0003_super.conf", Reference: "MAXN_SUPER", Modes: []SimMode{
			{ID: 0, Name: "15W", BudgetW: 15, GPUMaxFreqHz: 612 * mhz, GPUTPCs: 4, EMCMaxFreqHz: 2133 * mhz},
			{ID: 1, Name: "25W", BudgetW: 25, GPUMaxFreqHz: 918 * mhz, GPUTPCs: 4, EMCMaxFreqHz: 3199 * mhz},
			{ID: 2, Name: "MAXN_SUPER", GPUMaxFreqHz: 1020 * mhz, GPUTPCs: 4},
		}},
	}
}

// SimGPULimits are a simulated GPU's power limits, watts: the board's
// default (its published total board power), the highest and the lowest
// nvidia-smi -pl accepts.
type SimGPULimits struct {
	DefaultW, MaxW, MinW float64
}

// simGPULimits returns the simulated GPU hosts' limits. The minimum is not
// published for either board: 150 W is assumed (docs/engines.md says so).
func simGPULimits() map[SimProfile]SimGPULimits {
	return map[SimProfile]SimGPULimits{
		SimRTXPro6000:     {DefaultW: 600, MaxW: 600, MinW: 150},
		SimRTXPro6000MaxQ: {DefaultW: 300, MaxW: 300, MinW: 150},
	}
}
