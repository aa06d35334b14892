package telemetry

import (
	"fmt"
	"math/bits"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/vlmfleet/vlmfleet/agent/devicefacts/nvsmi"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// smiFields are queried every tick, probed first because an unknown field
// fails the whole query.
func smiFields() []string {
	return []string{"timestamp", "index", "utilization.gpu", "memory.used", "memory.total",
		"power.draw", "power.limit", "temperature.gpu", "clocks.sm", "clocks.mem",
		"clocks_event_reasons.active", "pstate"}
}

// smiAlternatives: drivers before 530 call clock event reasons throttle reasons.
func smiAlternatives() map[string]string {
	return map[string]string{"clocks_event_reasons.active": "clocks_throttle_reasons.active"}
}

// clockEventReason is one bit of nvidia-smi's clocks_event_reasons mask
// (nvmlClocksEventReason*). Throttling says whether it holds clocks back
// for a reason that matters to a measurement; idle, application clocks and
// display clocks do not.
type clockEventReason struct {
	bit        uint64
	name       string
	throttling bool
}

func clockEventReasons() []clockEventReason {
	return []clockEventReason{
		{0x1, "gpu_idle", false},
		{0x2, "applications_clocks_setting", false},
		{0x4, "sw_power_cap", true},
		{0x8, "hw_slowdown", true},
		{0x10, "sync_boost", true},
		{0x20, "sw_thermal_slowdown", true},
		{0x40, "hw_thermal_slowdown", true},
		{0x80, "hw_power_brake_slowdown", true},
		{0x100, "display_clock_setting", false},
	}
}

// DecodeClockEventReasons names the bits of a clocks_event_reasons.active
// mask ("0x0000000000000004"); unknown bits are named "bit_N".
func DecodeClockEventReasons(mask uint64) []string {
	var names []string
	for _, r := range clockEventReasons() {
		if mask&r.bit != 0 {
			names = append(names, r.name)
			mask &^= r.bit
		}
	}
	for mask != 0 {
		b := bits.TrailingZeros64(mask)
		names = append(names, fmt.Sprintf("bit_%d", b))
		mask &^= 1 << b
	}
	return names
}

// IsThrottling reports whether a throttle reason name means the device was
// held back (not idle, application or display clock settings).
func IsThrottling(name string) bool {
	for _, r := range clockEventReasons() {
		if r.name == name {
			return r.throttling
		}
	}
	return true
}

// ParseNvidiaSMI reads one CSV line of `nvidia-smi --query-gpu=FIELDS
// --format=csv,noheader,nounits`. "[N/A]" and "[Not Supported]" leave the
// value nil; fields it does not know are kept in Extra when numeric.
// Throttle holds only the throttling clock event reasons; the raw mask is in
// Extra["clocks_event_reasons"].
func ParseNvidiaSMI(fields []string, line string) (protocol.TelemetrySample, error) {
	vals, err := nvsmi.SplitRow(line, len(fields))
	if err != nil {
		return protocol.TelemetrySample{}, err
	}
	s := protocol.TelemetrySample{Extra: map[string]float64{}}
	for i, f := range fields {
		if err := readSMIField(&s, f, vals[i]); err != nil {
			return protocol.TelemetrySample{}, err
		}
	}
	if len(s.Extra) == 0 {
		s.Extra = nil
	}
	return s, nil
}

// readSMIField puts one queried field's value into s. The timestamp,
// pstate and clock event mask have formats of their own; every other field
// is a number, except the text facts, which a sample has no place for.
func readSMIField(s *protocol.TelemetrySample, f, v string) error {
	if nvsmi.Unavailable(v) {
		return nil
	}
	switch f {
	case "timestamp":
		t, err := time.ParseInLocation("2006/01/02 15:04:05.000", v, time.Local)
		if err != nil {
			return fmt.Errorf("nvidia-smi field timestamp: %q is not YYYY/MM/DD hh:mm:ss.mmm", clip(v, 40))
		}
		s.Time = t
		return nil
	case "pstate":
		p, err := strconv.Atoi(strings.TrimPrefix(v, "P"))
		if err != nil || !strings.HasPrefix(v, "P") {
			return fmt.Errorf("nvidia-smi field pstate: %q is not P0..P15", clip(v, 40))
		}
		s.Extra["pstate"] = float64(p)
		return nil
	case "clocks_event_reasons.active", "clocks_throttle_reasons.active":
		return readClockEventReasons(s, f, v)
	}
	x, ok := number(v)
	if !ok {
		switch f {
		case "name", "uuid", "pci.bus_id", "driver_version", "serial", "vbios_version", "compute_cap":
			return nil // text facts, not readings
		}
		return fmt.Errorf("nvidia-smi field %s: %q is not a number", f, clip(v, 40))
	}
	setSMIReading(s, f, x)
	return nil
}

// readClockEventReasons keeps the raw mask and, as Throttle, the reasons
// in it that hold clocks back.
func readClockEventReasons(s *protocol.TelemetrySample, f, v string) error {
	mask, err := strconv.ParseUint(strings.TrimPrefix(strings.ToLower(v), "0x"), 16, 64)
	if err != nil {
		return fmt.Errorf("nvidia-smi field %s: %q is not a hex bitmask", f, clip(v, 40))
	}
	s.Extra["clocks_event_reasons"] = float64(mask)
	for _, r := range DecodeClockEventReasons(mask) {
		if IsThrottling(r) {
			s.Throttle = append(s.Throttle, r)
		}
	}
	return nil
}

// setSMIReading files a numeric field under the sample's name for it,
// or under its nvidia-smi name in Extra when the sample has none.
func setSMIReading(s *protocol.TelemetrySample, f string, x float64) {
	switch f {
	case "index":
		s.Extra["gpu_index"] = x
	case "utilization.gpu":
		s.GPUUtil = &x
	case "memory.used":
		s.MemUsedMB = &x
	case "memory.total":
		s.MemTotalMB = &x
	case "power.draw", "power.draw.instant":
		// Either may be queried; the first one in the row wins.
		if s.PowerW == nil {
			s.PowerW = &x
		}
	case "temperature.gpu":
		s.TempC = &x
	case "power.limit":
		s.Extra["power_limit_w"] = x
	case "clocks.sm":
		s.Extra["sm_mhz"] = x
	case "clocks.mem":
		s.Extra["mem_mhz"] = x
	default:
		s.Extra[f] = x
	}
}

// CombineGPUs merges one tick's per-GPU samples into one: power and memory
// summed, temperature the hottest, utilisation the mean, throttle reasons
// the union. Each GPU's own values stay in Extra as gpuN_<name>.
func CombineGPUs(per []protocol.TelemetrySample) protocol.TelemetrySample {
	if len(per) == 1 {
		return per[0]
	}
	out := protocol.TelemetrySample{Extra: map[string]float64{}}
	var util []float64
	reasons := map[string]bool{}
	for n, g := range per {
		idx := n
		if v, ok := g.Extra["gpu_index"]; ok {
			idx = int(v)
		}
		p := fmt.Sprintf("gpu%d_", idx)
		if out.Time.IsZero() || g.Time.After(out.Time) {
			out.Time = g.Time
		}
		if g.GPUUtil != nil {
			util = append(util, *g.GPUUtil)
			out.Extra[p+"util"] = *g.GPUUtil
		}
		out.PowerW = addPtr(out.PowerW, g.PowerW)
		out.MemUsedMB = addPtr(out.MemUsedMB, g.MemUsedMB)
		out.MemTotalMB = addPtr(out.MemTotalMB, g.MemTotalMB)
		if g.PowerW != nil {
			out.Extra[p+"power_w"] = *g.PowerW
		}
		if g.MemUsedMB != nil {
			out.Extra[p+"mem_used_mb"] = *g.MemUsedMB
		}
		if g.TempC != nil {
			out.Extra[p+"temp_c"] = *g.TempC
			if out.TempC == nil || *g.TempC > *out.TempC {
				t := *g.TempC
				out.TempC = &t
			}
		}
		for k, v := range g.Extra {
			if k != "gpu_index" {
				out.Extra[p+k] = v
			}
		}
		for _, r := range g.Throttle {
			reasons[r] = true
		}
	}
	if len(util) > 0 {
		m := mean(util)
		out.GPUUtil = &m
	}
	out.Throttle = sortedKeys(reasons)
	out.Extra["gpus"] = float64(len(per))
	return out
}

func addPtr(acc, v *float64) *float64 {
	if v == nil {
		return acc
	}
	sum := *v
	if acc != nil {
		sum += *acc
	}
	return &sum
}

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

func sortedKeys(m map[string]bool) []string {
	if len(m) == 0 {
		return nil
	}
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
