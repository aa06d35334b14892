package protocol

import "time"

// Device kinds.
const (
	DeviceJetson    = "jetson"
	DeviceDGPU      = "dgpu"
	DeviceCPU       = "cpu"
	DeviceSimulated = "simulated"
)

// DeviceFacts is what an agent knows about the machine it measures on,
// recorded with every result.
type DeviceFacts struct {
	// Name is the display name used by the explorer ("Jetson Orin NX",
	// "RTX PRO 6000", "RTX PRO 6000 Max-Q").
	Name   string       `json:"name"`
	Kind   string       `json:"kind"`
	Jetson *JetsonFacts `json:"jetson,omitempty"`
	GPUs   []GPUFacts   `json:"gpus,omitempty"`
	Host   HostFacts    `json:"host"`
	// Warnings are facts that could not be read, with why.
	Warnings []string `json:"warnings,omitempty"`
}

// JetsonFacts come from the device tree, L4T release file and nvpmodel.
type JetsonFacts struct {
	Model     string `json:"model"`
	L4T       string `json:"l4t,omitempty"`
	JetPack   string `json:"jetpack,omitempty"`
	PowerMode string `json:"power_mode,omitempty"`
	// ClocksPinned is whether jetson_clocks holds the clocks at maximum; nil when unknown.
	ClocksPinned *bool `json:"clocks_pinned,omitempty"`
	MemoryMB     int   `json:"memory_mb,omitempty"`
}

// GPUFacts come from nvidia-smi.
type GPUFacts struct {
	Index              int     `json:"index"`
	Name               string  `json:"name"`
	UUID               string  `json:"uuid,omitempty"`
	Driver             string  `json:"driver,omitempty"`
	CUDA               string  `json:"cuda,omitempty"`
	MemoryMB           int     `json:"memory_mb,omitempty"`
	DefaultPowerLimitW float64 `json:"default_power_limit_w,omitempty"`
	MaxPowerLimitW     float64 `json:"max_power_limit_w,omitempty"`
	// PowerLimitW is the limit in force when the facts were read, and
	// MinPowerLimitW the lowest the GPU allows.
	PowerLimitW    float64 `json:"power_limit_w,omitempty"`
	MinPowerLimitW float64 `json:"min_power_limit_w,omitempty"`
	ComputeCap     string  `json:"compute_cap,omitempty"`
}

// HostFacts come from gopsutil.
type HostFacts struct {
	Hostname string `json:"hostname,omitempty"`
	CPUModel string `json:"cpu_model,omitempty"`
	Cores    int    `json:"cores,omitempty"`
	MemoryMB int    `json:"memory_mb,omitempty"`
	Kernel   string `json:"kernel,omitempty"`
	OS       string `json:"os,omitempty"`
	Arch     string `json:"arch,omitempty"`
}

// TelemetrySample is one reading of the hardware. A field that the source
// does not report is nil, never a made-up zero.
type TelemetrySample struct {
	Time       time.Time `json:"t"`
	GPUUtil    *float64  `json:"gpu_util,omitempty"`    // percent
	PowerW     *float64  `json:"power_w,omitempty"`     // board or module total
	TempC      *float64  `json:"temp_c,omitempty"`      // hottest GPU/junction sensor
	MemUsedMB  *float64  `json:"mem_used_mb,omitempty"` // GPU memory, or RAM on a Jetson
	MemTotalMB *float64  `json:"mem_total_mb,omitempty"`
	CPUUtil    *float64  `json:"cpu_util,omitempty"` // percent, all cores
	// Throttle names active throttling reasons (clock event reasons, thermal, over-current).
	Throttle []string `json:"throttle,omitempty"`
	// Rails are power rails in watts by name (tegrastats).
	Rails map[string]float64 `json:"rails,omitempty"`
	// Extra keeps every other field the source reported, by name.
	Extra map[string]float64 `json:"extra,omitempty"`
	// AgentCPU and AgentRSSMB are the agent process's own cost.
	AgentCPU   *float64 `json:"agent_cpu,omitempty"`
	AgentRSSMB *float64 `json:"agent_rss_mb,omitempty"`
}

// TelemetrySummary condenses the samples taken during one combination.
type TelemetrySummary struct {
	Samples     int      `json:"samples"`
	Source      string   `json:"source,omitempty"` // tegrastats, nvidia-smi, host, simulated
	GPUUtilMean *float64 `json:"gpu_util_mean,omitempty"`
	GPUUtilMax  *float64 `json:"gpu_util_max,omitempty"`
	PowerMeanW  *float64 `json:"power_mean_w,omitempty"`
	PowerMaxW   *float64 `json:"power_max_w,omitempty"`
	TempMaxC    *float64 `json:"temp_max_c,omitempty"`
	MemPeakMB   *float64 `json:"mem_peak_mb,omitempty"`
	Throttled   bool     `json:"throttled"`
	Throttle    []string `json:"throttle,omitempty"`
}
