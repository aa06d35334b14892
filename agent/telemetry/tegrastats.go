package telemetry

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// JetsonThermalThrottleC is the junction temperature from which a Jetson
// sample counts as thermally throttled. Orin modules begin software
// throttling in the high 90s C; 95 C flags samples at or near that point.
const JetsonThermalThrottleC = 95.0

// agxOrinTopRails are summed for PowerW on an AGX Orin, which has no VDD_IN.
// VDDQ_VDD2_1V8AO (DRAM) is left out: it is supplied from the 5 V system
// rail that VIN_SYS_5V0 already measures, so adding it would count it twice.
// The sum is the module's draw, not the carrier board's.
func agxOrinTopRails() []string { return []string{"VDD_GPU_SOC", "VDD_CPU_CV", "VIN_SYS_5V0"} }

// railRe matches a power rail reading: cur/avg[/max] in mW, each with or
// without the unit (JetPack 4 prints bare numbers).
func railRe() *regexp.Regexp {
	return regexp.MustCompile(`^(-?\d+(?:\.\d+)?)(?:mW)?/(-?\d+(?:\.\d+)?)(?:mW)?(?:/(-?\d+(?:\.\d+)?)(?:mW)?)?$`)
}

// engineRe matches an engine reading: "0%", "12%@1300", "0%@[0,0]" or a
// bare frequency "150".
func engineRe() *regexp.Regexp {
	return regexp.MustCompile(`^(?:(\d+(?:\.\d+)?)%)?(?:@?(\d+(?:\.\d+)?|\[[\d.,]*\]))?$`)
}

// tegrastatsParser holds the compiled patterns, so a running sampler
// compiles them once rather than per line.
type tegrastatsParser struct{ rails, engines *regexp.Regexp }

func newTegrastatsParser() *tegrastatsParser {
	return &tegrastatsParser{rails: railRe(), engines: engineRe()}
}

// ParseTegrastats reads one tegrastats line. Known fields fill the sample;
// other name/value pairs land in Extra; tokens it cannot read are skipped.
// It fails only when the line holds no tegrastats field at all.
func ParseTegrastats(line string) (protocol.TelemetrySample, error) {
	return newTegrastatsParser().parse(line)
}

func (p *tegrastatsParser) parse(line string) (protocol.TelemetrySample, error) {
	s := protocol.TelemetrySample{Extra: map[string]float64{}, Rails: map[string]float64{}}
	tok := strings.Fields(line)
	i := 0
	if len(tok) >= 2 {
		if t, err := time.ParseInLocation("01-02-2006 15:04:05", tok[0]+" "+tok[1], time.Local); err == nil {
			s.Time = t
			i = 2
		}
	}
	known := 0
	temps := map[string]float64{}
	rails, engines := p.rails, p.engines
	for ; i < len(tok); i++ {
		t := tok[i]
		next := ""
		if i+1 < len(tok) {
			next = tok[i+1]
		}
		switch {
		case strings.HasPrefix(t, "("):
			i = skipGroup(tok, i, s.Extra, "")
		case (t == "RAM" || t == "SWAP" || t == "IRAM") && next != "":
			used, total, unit, ok := usedTotal(next)
			if !ok {
				continue
			}
			known++
			i++
			key := strings.ToLower(t)
			if t == "RAM" && unit == "MB" {
				s.MemUsedMB, s.MemTotalMB = &used, &total
			}
			s.Extra[key+"_used_"+strings.ToLower(unit)] = used
			s.Extra[key+"_total_"+strings.ToLower(unit)] = total
			if i+1 < len(tok) && strings.HasPrefix(tok[i+1], "(") {
				i = skipGroup(tok, i+1, s.Extra, key)
			}
		case t == "CPU" && strings.HasPrefix(next, "["):
			known++
			i++
			parseCPUs(next, &s)
		case strings.Contains(t, "@") && strings.HasSuffix(t, "C") && !strings.HasPrefix(t, "@"):
			name, c, ok := temperature(t)
			if !ok {
				continue
			}
			known++
			if c <= -256 { // the sensor is off
				continue
			}
			temps[strings.ToLower(name)] = c
			s.Extra["temp_"+strings.ToLower(name)+"_c"] = c
		case next != "" && rails.MatchString(next):
			m := rails.FindStringSubmatch(next)
			i++
			known++
			if t == "NC" { // not connected
				continue
			}
			cur, ok1 := number(m[1])
			avg, ok2 := number(m[2])
			if !ok1 || !ok2 {
				continue
			}
			s.Rails[t] = cur / 1000
			s.Extra[strings.ToLower(t)+"_avg_w"] = avg / 1000
			if m[3] != "" {
				if mx, ok := number(m[3]); ok {
					s.Extra[strings.ToLower(t)+"_max_w"] = mx / 1000
				}
			}
		case next != "" && next != "off" && engines.MatchString(next) && isName(t):
			m := engines.FindStringSubmatch(next)
			i++
			key := strings.TrimSuffix(strings.ToLower(t), "_freq")
			if m[1] == "" && m[2] == "" {
				continue
			}
			known++
			if m[1] != "" {
				if u, ok := number(m[1]); ok {
					s.Extra[key+"_util"] = u
					if key == "gr3d" {
						s.GPUUtil = &u
					}
				}
			}
			freqs(m[2], key, s.Extra)
		case next == "off" && isName(t):
			i++
			s.Extra[strings.ToLower(t)+"_on"] = 0
		}
	}
	if known == 0 {
		return protocol.TelemetrySample{}, fmt.Errorf("not a tegrastats line (no RAM, CPU, GR3D_FREQ, temperature or power rail field): %q", clip(line, 200))
	}
	s.PowerW = jetsonPower(s.Rails)
	s.TempC = jetsonTemp(temps)
	if s.TempC != nil && *s.TempC >= JetsonThermalThrottleC {
		s.Throttle = []string{ThrottleThermal}
	}
	if len(s.Rails) == 0 {
		s.Rails = nil
	}
	if len(s.Extra) == 0 {
		s.Extra = nil
	}
	return s, nil
}

// temperature reads "gpu@47.625C" and JetPack 7's "gpu@47.625C/47.625C".
// Of JetPack 7's two values the first is taken: it sits where every
// older release prints the sensor's reading, and the power rails put the
// current reading first too. What the second means is not documented (in
// public captures it equals the first); were it a trip limit or a peak,
// the larger of the two would report a temperature the device is not at
// and mark cool samples as thermally throttled.
func temperature(t string) (name string, c float64, ok bool) {
	name, v, _ := strings.Cut(strings.TrimSuffix(t, "C"), "@")
	first, second, two := strings.Cut(v, "C/")
	if name == "" {
		return "", 0, false
	}
	if two {
		if _, ok := number(second); !ok {
			return "", 0, false
		}
	}
	c, ok = number(first)
	return name, c, ok
}

// Jetson throttle reasons.
const (
	ThrottleThermal     = "thermal"
	ThrottleOverCurrent = "over_current"
)

// skipGroup consumes a parenthesised group starting at tok[i] ("(lfb
// 8x4MB)", "(cached 0MB)") and keeps what it knows of it.
func skipGroup(tok []string, i int, extra map[string]float64, key string) int {
	start := i
	for ; i < len(tok); i++ {
		if strings.HasSuffix(tok[i], ")") {
			break
		}
	}
	if i >= len(tok) {
		i = len(tok) - 1
	}
	group := strings.Trim(strings.Join(tok[start:i+1], " "), "()")
	f := strings.Fields(group)
	if key == "" || len(f) != 2 {
		return i
	}
	switch {
	case f[0] == "lfb":
		// "8x4MB": eight free blocks of 4 MB.
		if n, size, ok := strings.Cut(strings.TrimSuffix(f[1], "MB"), "x"); ok {
			if a, ok1 := number(n); ok1 {
				if b, ok2 := number(size); ok2 {
					extra[key+"_lfb_mb"] = a * b
				}
			}
		} else if v, ok := number(strings.TrimSuffix(strings.TrimSuffix(f[1], "kB"), "MB")); ok {
			extra[key+"_lfb"] = v
		}
	case f[0] == "cached":
		if v, ok := number(strings.TrimSuffix(f[1], "MB")); ok {
			extra[key+"_cached_mb"] = v
		}
	}
	return i
}

// usedTotal reads "1224/15656MB" or "0/252kB".
func usedTotal(v string) (used, total float64, unit string, ok bool) {
	for _, u := range []string{"MB", "kB", "GB"} {
		if body, found := strings.CutSuffix(v, u); found {
			a, b, cut := strings.Cut(body, "/")
			x, ok1 := number(a)
			y, ok2 := number(b)
			if cut && ok1 && ok2 {
				return x, y, u, true
			}
		}
	}
	return 0, 0, "", false
}

// parseCPUs reads "[1%@729,0%@729,off]": per-core load and MHz; CPUUtil is
// the mean over the cores that are on.
func parseCPUs(list string, s *protocol.TelemetrySample) {
	cores := strings.Split(strings.Trim(list, "[]"), ",")
	sum, on := 0.0, 0
	for n, c := range cores {
		if c == "off" || c == "" {
			continue
		}
		pct, mhz, _ := strings.Cut(c, "@")
		u, ok := number(strings.TrimSuffix(pct, "%"))
		if !ok {
			continue
		}
		sum += u
		on++
		s.Extra[fmt.Sprintf("cpu%d_util", n)] = u
		if f, ok := number(mhz); ok {
			s.Extra[fmt.Sprintf("cpu%d_mhz", n)] = f
		}
	}
	s.Extra["cpu_online"] = float64(on)
	if on > 0 {
		mean := sum / float64(on)
		s.CPUUtil = &mean
	}
}

// freqs reads "1300" or "[305,305]" (per GPC) into Extra.
func freqs(v, key string, extra map[string]float64) {
	if v == "" {
		return
	}
	if strings.HasPrefix(v, "[") {
		for n, f := range strings.Split(strings.Trim(v, "[]"), ",") {
			if x, ok := number(f); ok {
				extra[fmt.Sprintf("%s_gpc%d_mhz", key, n)] = x
			}
		}
		return
	}
	if x, ok := number(v); ok {
		extra[key+"_mhz"] = x
	}
}

// jetsonPower is the module total: VDD_IN on an Orin NX/Nano (with
// VDD_CPU_GPU_CV and VDD_SOC inside it), POM_5V_IN on JetPack 4 modules,
// VIN on an AGX Thor (JetPack 7; above the sum of VDD_GPU, VDD_CPU_SOC_MSS
// and VIN_SYS_5V0 in every capture, as an input is), and the sum of the
// top-level rails on an AGX Orin.
func jetsonPower(rails map[string]float64) *float64 {
	for _, total := range []string{"VDD_IN", "POM_5V_IN", "VIN"} {
		if w, ok := rails[total]; ok {
			return &w
		}
	}
	if _, ok := rails["VDD_GPU_SOC"]; !ok {
		return nil
	}
	sum := 0.0
	for _, r := range agxOrinTopRails() {
		sum += rails[r]
	}
	return &sum
}

// jetsonTemp is the hotter of the GPU and junction sensors, else the
// hottest sensor reported.
func jetsonTemp(temps map[string]float64) *float64 {
	var best *float64
	consider := func(v float64) {
		if best == nil || v > *best {
			best = &v
		}
	}
	for _, n := range []string{"gpu", "tj"} {
		if v, ok := temps[n]; ok {
			consider(v)
		}
	}
	if best != nil {
		return best
	}
	for _, v := range temps {
		consider(v)
	}
	return best
}

func isName(t string) bool {
	if t == "" {
		return false
	}
	for _, r := range t {
		if !(r == '_' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return t[0] < '0' || t[0] > '9'
}

// number parses a finite decimal; NaN and infinities are not readings and
// would break the JSON encoding of a sample.
func number(s string) (float64, bool) {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
