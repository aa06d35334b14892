package fakehw

// The tegrastats lines below are verbatim from public sources,
// except AGXThorLine, written in the format public JetPack 7 captures show.

// OrinNXLine is tegrastats on an Orin NX 16GB, JetPack 6.
const OrinNXLine = "07-16-2026 13:03:45 RAM 1224/15656MB (lfb 8x4MB) SWAP 0/7828MB (cached 0MB) CPU [1%@729,0%@729,0%@729,0%@729,0%@729,0%@729,0%@729,0%@729] GR3D_FREQ 0% cv0@41.156C cpu@45.843C soc2@39.593C soc0@42.562C cv1@42.156C gpu@43.406C tj@45.843C soc1@40.25C cv2@38.593C VDD_IN 4304mW/4304mW VDD_CPU_GPU_CV 573mW/573mW VDD_SOC 1218mW/1218mW"

// AGXOrinLine is tegrastats on an AGX Orin 64GB.
const AGXOrinLine = "03-17-2024 18:54:10 RAM 10239/62841MB (lfb 442x4MB) SWAP 1/31421MB (cached 0MB) CPU [0%@1728,0%@1728,0%@1728,0%@1728,0%@1420,0%@1420,0%@1420,0%@1420,off,off,off,off] GR3D_FREQ 0% cpu@37.5C tboard@27C soc2@34.562C tdiode@27.5C soc0@34.531C tj@37.5C soc1@33.656C VDD_GPU_SOC 1592mW/1592mW VDD_CPU_CV -398mW/-398mW VIN_SYS_5V0 2624mW/2624mW VDDQ_VDD2_1V8AO 403mW/403mW"

// JetPack5Fragment is part of a JetPack 5 AGX Orin line.
const JetPack5Fragment = "EMC_FREQ 0%@2133 GR3D_FREQ 0%@[0,0] CV0@-256C CPU@44.562C GPU@-256C tj@44.343C VDD_GPU_SOC 2340mW/2340mW VDD_CPU_CV 390mW/390mW VIN_SYS_5V0 4025mW/4025mW NC 0mW/0mW VDDQ_VDD2_1V8AO 301mW/301mW NC 0mW/0mW"

// AGXThorLine is tegrastats on a Jetson AGX Thor, JetPack 7 (L4T r38),
// in the shape public captures show: every temperature carries two
// values ("gpu@47.625C/47.625C"), GR3D_FREQ gives the three GPC clocks
// without a load, and the rails are VDD_GPU, VDD_CPU_SOC_MSS, VIN_SYS_5V0
// and the module input VIN.
const AGXThorLine = "11-29-2026 09:12:07 RAM 21877/125772MB (lfb 61x4MB) SWAP 0/4096MB (cached 0MB) CPU [3%@972,1%@972,0%@972,0%@972,2%@1566,0%@1566,0%@972,0%@972,0%@972,0%@972,1%@972,0%@972,0%@972,0%@972] EMC_FREQ 4%@2750 GR3D_FREQ @[1575,1575,1575] NVENC0_FREQ @314 NVDEC0_FREQ @314 VIC off PVA0_FREQ off APE 300 cpu@46.218C/46.218C tj@48.031C/48.031C soc012@45.5C/45.5C gpu@47.625C/47.625C soc345@46.843C/46.843C VDD_GPU 18210mW/17950mW/18210mW VDD_CPU_SOC_MSS 7122mW/7010mW/7122mW VIN_SYS_5V0 6890mW/6841mW/6890mW VIN 38022mW/37480mW/38022mW"

// OrinNX is a Jetson Orin NX with tegrastats and nvpmodel.
func OrinNX() Config {
	return Config{
		Tegrastats: &Tegrastats{Lines: []string{OrinNXLine}},
		NVPModel:   &NVPModel{Mode: "MAXN", ID: 0},
	}
}

// AGXOrin is a Jetson AGX Orin with tegrastats and nvpmodel.
func AGXOrin() Config {
	return Config{
		Tegrastats: &Tegrastats{Lines: []string{AGXOrinLine}},
		NVPModel:   &NVPModel{Mode: "MODE_30W", ID: 2},
	}
}

// AGXThor is a Jetson AGX Thor on JetPack 7 with tegrastats and nvpmodel.
func AGXThor() Config {
	return Config{
		Tegrastats: &Tegrastats{Lines: []string{AGXThorLine}},
		NVPModel:   &NVPModel{Mode: "MAXN", ID: 0},
	}
}

// RTXPro6000MaxQ is a workstation with one RTX PRO 6000 Max-Q on a driver
// that knows clocks_event_reasons.
func RTXPro6000MaxQ() Config {
	return Config{SMI: &SMI{Driver: "580.65.06", CUDA: "13.0", GPUs: []map[string]string{{
		"index": "0", "name": "NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition",
		"uuid": "GPU-2f6e3c1a-8d4b-4e6f-9a1c-3b5d7e9f0a12", "pci.bus_id": "00000000:01:00.0",
		"memory.total": "97887", "memory.used": "85012", "utilization.gpu": "87", "utilization.memory": "41",
		"power.draw": "287.45", "power.limit": "300.00", "power.default_limit": "300.00",
		"power.max_limit": "300.00", "power.min_limit": "150.00", "temperature.gpu": "71",
		"clocks.sm": "2430", "clocks.mem": "13365", "clocks_event_reasons.active": "0x0000000000000004",
		"pstate": "P1", "compute_cap": "12.0",
	}}}}
}

// RTXPro6000Pair is a workstation with two 600 W RTX PRO 6000 on an older
// driver that still calls them clocks_throttle_reasons.
func RTXPro6000Pair() Config {
	gpu := func(i, uuid, util, power, temp string) map[string]string {
		return map[string]string{
			"index": i, "name": "NVIDIA RTX PRO 6000 Blackwell Workstation Edition", "uuid": uuid,
			"memory.total": "97887", "memory.used": "1024", "utilization.gpu": util,
			"power.draw": power, "power.limit": "600.00", "power.default_limit": "600.00",
			"power.max_limit": "600.00", "temperature.gpu": temp, "clocks.sm": "[N/A]",
			"clocks.mem": "14001", "clocks_throttle_reasons.active": "0x0000000000000001",
			"pstate": "P8", "compute_cap": "12.0",
		}
	}
	return Config{SMI: &SMI{
		Driver: "570.86.10", CUDA: "12.8",
		Unsupported: []string{"clocks_event_reasons.active"},
		GPUs: []map[string]string{
			gpu("0", "GPU-aaaaaaaa-0000-0000-0000-000000000000", "10", "100.50", "40"),
			gpu("1", "GPU-bbbbbbbb-0000-0000-0000-000000000000", "30", "200.25", "55"),
		},
	}}
}
