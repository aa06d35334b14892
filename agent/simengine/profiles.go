// Package simengine is a simulated vision-language-model engine: a real
// OpenAI-compatible HTTP server whose delays follow a queueing model
// calibrated from the published explorer's figures (explorer/testdata/seed.txt), so that
// a lab can be rehearsed, and the whole measurement path tested, with no GPU.
package simengine

import (
	"fmt"
	"sort"
	"strings"
)

// The engines the published profiles were measured on, by the names
// people know them by: the display names of agent/engine's kinds, which
// its tests hold these to (the simulator stands in for those engines).
const (
	EngineLlamaCpp = "llama.cpp"
	EngineVLLM     = "vLLM"
)

// Profile is one simulated (device, model, quantization, engine)
// configuration: the figures the seed publishes for it and the fitted
// parameters of the timing model.
type Profile struct {
	Device       string
	Model        string
	ParamsB      float64
	Quantization string
	Engine       string

	// Seed figures, single camera.
	TTFT720   float64 // seconds to first token, one 720p image
	TPS       float64 // tokens per second written to one camera
	MultiN    int     // images per request of the multi-image figure (5, or 3)
	TTFTMulti float64 // seconds, MultiN 720p images
	BigSize   string  // "1080p" or "2K": the large single-image figure
	TTFTBig   float64 // seconds, one BigSize image

	// Targets are the published Max Cameras readings, at 720p with one image.
	Targets []Target
	// LoadPoints are published mean TTFTs at a camera level, 720p one image.
	LoadPoints []LoadPoint

	// Contention is the fitted weight of the streams being decoded against
	// a prefill when they share the device (see model.go), within
	// contentionRange; fitted by FitContention against Targets and
	// LoadPoints in closed loops run as the load generator runs them.
	Contention float64

	// Limits: what the configuration was measured with. A request beyond them
	// is refused the way the engine refuses it.
	MaxImages int    // images per request
	MaxSize   string // largest image size accepted

	// Image token accounting (prompt_tokens): a fixed count per image, or one
	// token per PixelsPerToken×PixelsPerToken patch.
	FixedImageTokens int
	PixelsPerToken   int

	// DC is the fitted timing of a data-center configuration (datacenter.go);
	// nil on the edge profiles, which the camera model above times.
	DC *DataCenter
}

// Target is one Max Cameras reading: at TargetS seconds, Max cameras keep up;
// Plus means it still met the target at the highest level measured.
type Target struct {
	TargetS float64
	Max     int
	Plus    bool
}

// LoadPoint is a published mean TTFT at a camera level.
type LoadPoint struct {
	Cameras int
	TTFT    float64
}

// Key is the profile's stable identifier: "device/model/quantization/engine".
func (p Profile) Key() string {
	k := p.Device + "/" + p.Model + "/" + p.Quantization + "/" + p.Engine
	if p.DC != nil {
		k += fmt.Sprintf("/TP%d", p.DC.TP)
	}
	return k
}

// TP is the profile's tensor-parallel size, which is also its GPU count
// (1 on the edge profiles).
func (p Profile) TP() int {
	if p.DC != nil {
		return p.DC.TP
	}
	return 1
}

// Levels are the camera levels the seed measured on the profile's device.
func (p Profile) Levels() []int { return DeviceLevels(p.Device) }

// RequestsPerLevel is the seed's request count per camera level on the device.
func (p Profile) RequestsPerLevel() int {
	if isJetson(p.Device) {
		return 8
	}
	return 24
}

// DeviceLevels are the camera levels measured on a device: "1, 2 and 4
// cameras on Jetson Orin NX …, up to 8 on Jetson AGX Orin and up to 16 on
// RTX PRO 6000".
func DeviceLevels(device string) []int {
	switch {
	case strings.EqualFold(device, "Jetson Orin NX"):
		return []int{1, 2, 4}
	case strings.EqualFold(device, "Jetson AGX Orin"):
		return []int{1, 2, 4, 8}
	default:
		return []int{1, 2, 4, 8, 16}
	}
}

func isJetson(device string) bool {
	return strings.HasPrefix(strings.ToLower(device), "jetson")
}

// Profiles returns every calibrated profile, in the seed's order.
func Profiles() []Profile {
	rows := seedTable()
	out := make([]Profile, 0, len(rows))
	for _, r := range rows {
		out = append(out, r.profile())
	}
	return out
}

// Devices lists the simulated device names.
func Devices() []string {
	var out []string
	seen := map[string]bool{}
	for _, p := range Profiles() {
		if !seen[p.Device] {
			seen[p.Device] = true
			out = append(out, p.Device)
		}
	}
	return out
}

// ProfilesFor returns the profiles of a device (case-insensitive name).
func ProfilesFor(device string) []Profile {
	var out []Profile
	for _, p := range Profiles() {
		if strings.EqualFold(p.Device, device) {
			out = append(out, p)
		}
	}
	return out
}

// normEngine makes "vllm", "vLLM", "llamacpp" and "llama.cpp" compare equal.
func normEngine(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// DataCenterDevices lists the simulated data-center GPUs, in the
// published tables' order.
func DataCenterDevices() []string {
	ps, err := DataCenterProfiles()
	if err != nil {
		return nil
	}
	var out []string
	seen := map[string]bool{}
	for _, p := range ps {
		if !seen[p.Device] {
			seen[p.Device] = true
			out = append(out, p.Device)
		}
	}
	return out
}

// Lookup finds the profile for a device and model; an empty quantization or
// engine takes the first match. The error lists the valid choices. A
// data-center GPU is looked up at tensor-parallel size 1 (LookupTP).
func Lookup(device, model, quantization, engine string) (Profile, error) {
	return LookupTP(device, model, quantization, engine, 0)
}

// LookupTP is Lookup with a tensor-parallel size, which only the
// data-center GPUs have (0 means 1; an edge device takes only 0 or 1).
func LookupTP(device, model, quantization, engine string, tp int) (Profile, error) {
	if IsDataCenterGPU(device) {
		return lookupDataCenter(device, model, quantization, engine, tp)
	}
	if tp > 1 {
		return Profile{}, fmt.Errorf("tensor_parallel_size %d: simulated %s has one GPU", tp, device)
	}
	forDev := ProfilesFor(device)
	if len(forDev) == 0 {
		return Profile{}, fmt.Errorf("simulated device %q: want one of %s", device,
			strings.Join(append(Devices(), DataCenterDevices()...), ", "))
	}
	var choices []string
	for _, p := range forDev {
		if !strings.EqualFold(p.Model, model) {
			continue
		}
		choices = append(choices, p.Quantization+" "+p.Engine)
		if quantization != "" && !strings.EqualFold(p.Quantization, quantization) {
			continue
		}
		if engine != "" && normEngine(p.Engine) != normEngine(engine) {
			continue
		}
		return p, nil
	}
	if len(choices) > 0 {
		return Profile{}, fmt.Errorf("simulated %s on %s: no profile with quantization %q engine %q; have: %s",
			model, device, quantization, engine, strings.Join(choices, "; "))
	}
	models := map[string]bool{}
	for _, p := range forDev {
		models[p.Model] = true
	}
	names := make([]string, 0, len(models))
	for m := range models {
		names = append(names, m)
	}
	sort.Strings(names)
	return Profile{}, fmt.Errorf("simulated model %q on %s: want one of %s", model, forDev[0].Device, strings.Join(names, ", "))
}
