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

// tegrastatsLine is one line part-way through being read: the fields are
// read left to right, some consuming the token after them, and each adds to
// the sample, the temperatures the hottest is chosen from at the end, and
// the count of fields recognised that decides whether it was a tegrastats
// line at all.
type tegrastatsLine struct {
	p     *tegrastatsParser
	tok   []string
	i     int
	s     protocol.TelemetrySample
	known int
	temps map[string]float64
}

func (p *tegrastatsParser) parse(line string) (protocol.TelemetrySample, error) {
	l := &tegrastatsLine{
		p:     p,
		tok:   strings.Fields(line),
		s:     protocol.TelemetrySample{Extra: map[string]float64{}, Rails: map[string]float64{}},
		temps: map[string]float64{},
	}
	l.timestamp()
	for ; l.i < len(l.tok); l.i++ {
		l.field()
	}
	if l.known == 0 {
		return protocol.TelemetrySample{}, fmt.Errorf("not a tegrastats line (no RAM, CPU, GR3D_FREQ, temperature or power rail field): %q", clip(line, 200))
	}
	return l.finish(), nil
}

// timestamp takes a leading date and time when the line has one; lines
// without one start straight with the fields.
func (l *tegrastatsLine) timestamp() {
	if len(l.tok) < 2 {
		return
	}
	if t, err := time.ParseInLocation("01-02-2006 15:04:05", l.tok[0]+" "+l.tok[1], time.Local); err == nil {
		l.s.Time = t
		l.i = 2
	}
}

// field reads the field at the cursor, leaving the cursor on the last token
// it used.
func (l *tegrastatsLine) field() {
	t := l.tok[l.i]
	next := ""
	if l.i+1 < len(l.tok) {
		next = l.tok[l.i+1]
	}
	switch {
	case strings.HasPrefix(t, "("):
		l.i = skipGroup(l.tok, l.i, l.s.Extra, "")
	case (t == "RAM" || t == "SWAP" || t == "IRAM") && next != "":
		l.memory(t, next)
	case t == "CPU" && strings.HasPrefix(next, "["):
		l.known++
		l.i++
		parseCPUs(next, &l.s)
	case strings.Contains(t, "@") && strings.HasSuffix(t, "C") && !strings.HasPrefix(t, "@"):
		l.temperature(t)
	case next != "" && l.p.rails.MatchString(next):
		l.rail(t, next)
	case next != "" && next != "off" && l.p.engines.MatchString(next) && isName(t):
		l.engine(t, next)
	case next == "off" && isName(t):
		l.i++
		l.s.Extra[strings.ToLower(t)+"_on"] = 0
	}
}

// memory reads "RAM 1224/15656MB (lfb 8x4MB)" and its SWAP and IRAM kin.
func (l *tegrastatsLine) memory(t, next string) {
	used, total, unit, ok := usedTotal(next)
	if !ok {
		return
	}
	l.known++
	l.i++
	key := strings.ToLower(t)
	if t == "RAM" && unit == "MB" {
		l.s.MemUsedMB, l.s.MemTotalMB = &used, &total
	}
	l.s.Extra[key+"_used_"+strings.ToLower(unit)] = used
	l.s.Extra[key+"_total_"+strings.ToLower(unit)] = total
	if l.i+1 < len(l.tok) && strings.HasPrefix(l.tok[l.i+1], "(") {
		l.i = skipGroup(l.tok, l.i+1, l.s.Extra, key)
	}
}

// temperature reads one sensor, "gpu@47.625C".
func (l *tegrastatsLine) temperature(t string) {
	name, c, ok := temperature(t)
	if !ok {
		return
	}
	l.known++
	if c <= -256 { // the sensor is off
		return
	}
	l.temps[strings.ToLower(name)] = c
	l.s.Extra["temp_"+strings.ToLower(name)+"_c"] = c
}

// rail reads one power rail, "VDD_IN 4939mW/4939mW".
func (l *tegrastatsLine) rail(t, next string) {
	m := l.p.rails.FindStringSubmatch(next)
	l.i++
	l.known++
	if t == "NC" { // not connected
		return
	}
	cur, ok1 := number(m[1])
	avg, ok2 := number(m[2])
	if !ok1 || !ok2 {
		return
	}
	l.s.Rails[t] = cur / 1000
	l.s.Extra[strings.ToLower(t)+"_avg_w"] = avg / 1000
	if m[3] != "" {
		if mx, ok := number(m[3]); ok {
			l.s.Extra[strings.ToLower(t)+"_max_w"] = mx / 1000
		}
	}
}

// engine reads one engine's load and clock, "GR3D_FREQ 12%@1300".
func (l *tegrastatsLine) engine(t, next string) {
	m := l.p.engines.FindStringSubmatch(next)
	l.i++
	key := strings.TrimSuffix(strings.ToLower(t), "_freq")
	if m[1] == "" && m[2] == "" {
		return
	}
	l.known++
	if m[1] != "" {
		if u, ok := number(m[1]); ok {
			l.s.Extra[key+"_util"] = u
			if key == "gr3d" {
				l.s.GPUUtil = &u
			}
		}
	}
	freqs(m[2], key, l.s.Extra)
}

// finish derives the module-wide readings from the fields read and drops
// empty maps, so a sample without rails or extras encodes without them.
func (l *tegrastatsLine) finish() protocol.TelemetrySample {
	s := l.s
	s.PowerW = jetsonPower(s.Rails)
	s.TempC = jetsonTemp(l.temps)
	if s.TempC != nil && *s.TempC >= JetsonThermalThrottleC {
		s.Throttle = []string{ThrottleThermal}
	}
	if len(s.Rails) == 0 {
		s.Rails = nil
	}
	if len(s.Extra) == 0 {
		s.Extra = nil
	}
	return s
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
