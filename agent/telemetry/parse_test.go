package telemetry

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/agent/devicefacts/fakehw"
	"github.com/vlmfleet/vlmfleet/protocol"
)

func near(p *float64, want float64) bool { return p != nil && math.Abs(*p-want) < 1e-9 }

func show(p *float64) string {
	if p == nil {
		return "nil"
	}
	b, _ := json.Marshal(*p)
	return string(b)
}

func TestParseTegrastatsOrinNX(t *testing.T) {
	s, err := ParseTegrastats(fakehw.OrinNXLine)
	if err != nil {
		t.Fatal(err)
	}
	if want := time.Date(2026, 7, 16, 13, 3, 45, 0, time.Local); !s.Time.Equal(want) {
		t.Errorf("time %v, want %v", s.Time, want)
	}
	if !near(s.MemUsedMB, 1224) || !near(s.MemTotalMB, 15656) {
		t.Errorf("RAM %s/%s", show(s.MemUsedMB), show(s.MemTotalMB))
	}
	if !near(s.GPUUtil, 0) || !near(s.CPUUtil, 1.0/8) {
		t.Errorf("GPU %s CPU %s", show(s.GPUUtil), show(s.CPUUtil))
	}
	if !near(s.TempC, 45.843) {
		t.Errorf("temp %s, want tj 45.843 (hotter than gpu 43.406)", show(s.TempC))
	}
	if !near(s.PowerW, 4.304) {
		t.Errorf("power %s, want VDD_IN 4.304", show(s.PowerW))
	}
	wantRails := map[string]float64{"VDD_IN": 4.304, "VDD_CPU_GPU_CV": 0.573, "VDD_SOC": 1.218}
	if !reflect.DeepEqual(s.Rails, wantRails) {
		t.Errorf("rails %v, want %v", s.Rails, wantRails)
	}
	for k, v := range map[string]float64{"swap_used_mb": 0, "swap_total_mb": 7828, "swap_cached_mb": 0,
		"ram_lfb_mb": 32, "cpu_online": 8, "cpu0_util": 1, "cpu7_mhz": 729, "temp_cv2_c": 38.593,
		"vdd_in_avg_w": 4.304, "gr3d_util": 0} {
		if got, ok := s.Extra[k]; !ok || got != v {
			t.Errorf("Extra[%s] = %v (present %v), want %v", k, got, ok, v)
		}
	}
	if len(s.Throttle) != 0 {
		t.Errorf("throttle %v at 45 C", s.Throttle)
	}
}

func TestParseTegrastatsAGXOrin(t *testing.T) {
	s, err := ParseTegrastats(fakehw.AGXOrinLine)
	if err != nil {
		t.Fatal(err)
	}
	if !near(s.MemUsedMB, 10239) || !near(s.MemTotalMB, 62841) || !near(s.CPUUtil, 0) {
		t.Errorf("RAM %s/%s CPU %s", show(s.MemUsedMB), show(s.MemTotalMB), show(s.CPUUtil))
	}
	if s.Extra["cpu_online"] != 8 {
		t.Errorf("cpu_online %v, want 8 (four cores off)", s.Extra["cpu_online"])
	}
	if _, ok := s.Extra["cpu8_util"]; ok {
		t.Error("an off core has no load")
	}
	// No VDD_IN: the top-level rails, the negative reading kept as is.
	if !near(s.PowerW, 1.592-0.398+2.624) {
		t.Errorf("power %s, want VDD_GPU_SOC+VDD_CPU_CV+VIN_SYS_5V0 = 3.818", show(s.PowerW))
	}
	if s.Rails["VDD_CPU_CV"] != -0.398 || s.Rails["VDDQ_VDD2_1V8AO"] != 0.403 {
		t.Errorf("rails %v", s.Rails)
	}
	if !near(s.TempC, 37.5) || s.Extra["temp_tboard_c"] != 27 {
		t.Errorf("temp %s extra %v", show(s.TempC), s.Extra)
	}
}

func TestParseTegrastatsJetPack5Fragment(t *testing.T) {
	s, err := ParseTegrastats(fakehw.JetPack5Fragment)
	if err != nil {
		t.Fatal(err)
	}
	if !s.Time.IsZero() || s.MemUsedMB != nil {
		t.Errorf("no time or RAM in a fragment: %v %s", s.Time, show(s.MemUsedMB))
	}
	if !near(s.GPUUtil, 0) || s.Extra["emc_util"] != 0 || s.Extra["emc_mhz"] != 2133 {
		t.Errorf("GPU %s extra %v", show(s.GPUUtil), s.Extra)
	}
	if _, ok := s.Extra["gr3d_gpc1_mhz"]; !ok {
		t.Errorf("per-GPC frequencies missing: %v", s.Extra)
	}
	if _, ok := s.Extra["temp_gpu_c"]; ok {
		t.Error("GPU@-256C means the sensor is off")
	}
	if !near(s.TempC, 44.343) {
		t.Errorf("temp %s, want tj 44.343", show(s.TempC))
	}
	if _, ok := s.Rails["NC"]; ok || len(s.Rails) != 4 {
		t.Errorf("rails %v: NC must be ignored", s.Rails)
	}
	if !near(s.PowerW, 2.34+0.39+4.025) {
		t.Errorf("power %s", show(s.PowerW))
	}
}

// JetPack 7 prints every temperature with two values; the reading must
// still be taken, or a Thor reports no temperature.
func TestParseTegrastatsJetPack7(t *testing.T) {
	s, err := ParseTegrastats(fakehw.AGXThorLine)
	if err != nil {
		t.Fatal(err)
	}
	if !near(s.TempC, 48.031) {
		t.Errorf("temp %s, want tj 48.031 (hotter than gpu 47.625)", show(s.TempC))
	}
	for k, v := range map[string]float64{"temp_gpu_c": 47.625, "temp_tj_c": 48.031, "temp_soc012_c": 45.5, "temp_cpu_c": 46.218,
		"gr3d_gpc2_mhz": 1575, "vin_avg_w": 37.48} {
		if got, ok := s.Extra[k]; !ok || got != v {
			t.Errorf("Extra[%s] = %v (present %v), want %v", k, got, ok, v)
		}
	}
	if s.GPUUtil != nil {
		t.Errorf("GPU load %s: JetPack 7's GR3D_FREQ carries clocks only", show(s.GPUUtil))
	}
	// VIN is the module's input, as VDD_IN is on an Orin NX.
	if !near(s.PowerW, 38.022) {
		t.Errorf("power %s, want VIN 38.022", show(s.PowerW))
	}
	if !near(s.MemUsedMB, 21877) || s.Extra["cpu_online"] != 14 {
		t.Errorf("RAM %s, %v cores", show(s.MemUsedMB), s.Extra["cpu_online"])
	}
	// The first value is the reading: a hot first value throttles whatever
	// the second says, and a sensor that is off is off.
	for _, tc := range []struct {
		line string
		want float64
		hot  bool
	}{
		{"RAM 1/2MB gpu@96.5C/90C tj@95.25C/95.25C", 96.5, true},
		{"RAM 1/2MB gpu@-256C/-256C tj@51C/51C", 51, false},
		{"RAM 1/2MB gpu@50C/ tj@49C", 49, false}, // a broken pair is skipped, the other sensors kept
	} {
		s, err := ParseTegrastats(tc.line)
		if err != nil {
			t.Errorf("%q: %v", tc.line, err)
			continue
		}
		if !near(s.TempC, tc.want) || (len(s.Throttle) > 0) != tc.hot {
			t.Errorf("%q: temp %s throttle %v, want %v hot %v", tc.line, show(s.TempC), s.Throttle, tc.want, tc.hot)
		}
	}
}

func TestParseTegrastatsVariants(t *testing.T) {
	for _, tc := range []struct {
		name, line     string
		gpu, power, tc float64
		throttle       []string
		extra          map[string]float64
	}{
		{"three rail values", "RAM 2000/7620MB GR3D_FREQ 12%@1020 gpu@50C tj@51C VDD_IN 5000mW/4800mW/6100mW VDD_SOC 900mW/880mW/1000mW",
			12, 5, 51, nil, map[string]float64{"vdd_in_max_w": 6.1, "vdd_in_avg_w": 4.8, "gr3d_mhz": 1020}},
		{"JetPack 4 Nano", "RAM 2000/3964MB (lfb 100x4MB) SWAP 0/1982MB (cached 0MB) IRAM 0/252kB(lfb 252kB) CPU [10%@1479,off,off,5%@1479] EMC_FREQ 3%@1600 GR3D_FREQ 45%@921 APE 25 PLL@40C CPU@42.5C PMIC@50C GPU@40.5C AO@47C thermal@41.25C POM_5V_IN 3210/3210 POM_5V_GPU 498/498 POM_5V_CPU 622/622",
			45, 3.21, 40.5, nil, map[string]float64{"cpu_online": 2, "ape_mhz": 25, "ram_lfb_mb": 400}},
		{"hot junction", "GR3D_FREQ 99%@[1300,1300] gpu@93C tj@97.5C VDD_IN 30000mW/29000mW",
			99, 30, 97.5, []string{ThrottleThermal}, nil},
		{"unknown fields", "GR3D_FREQ 5% FOO_BAR 12%@300 weird-token NVDEC off VIC_FREQ 0%@115 VDD_IN 1000mW/1000mW",
			5, 1, math.NaN(), nil, map[string]float64{"foo_bar_util": 12, "foo_bar_mhz": 300, "nvdec_on": 0, "vic_mhz": 115}},
	} {
		s, err := ParseTegrastats(tc.line)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if !near(s.GPUUtil, tc.gpu) || !near(s.PowerW, tc.power) {
			t.Errorf("%s: GPU %s power %s", tc.name, show(s.GPUUtil), show(s.PowerW))
		}
		if math.IsNaN(tc.tc) != (s.TempC == nil) || s.TempC != nil && !near(s.TempC, tc.tc) {
			t.Errorf("%s: temp %s, want %v", tc.name, show(s.TempC), tc.tc)
		}
		if !reflect.DeepEqual(s.Throttle, tc.throttle) {
			t.Errorf("%s: throttle %v, want %v", tc.name, s.Throttle, tc.throttle)
		}
		for k, v := range tc.extra {
			if got, ok := s.Extra[k]; !ok || got != v {
				t.Errorf("%s: Extra[%s] = %v (present %v), want %v", tc.name, k, got, ok, v)
			}
		}
	}
	for _, bad := range []string{"", "hello world", "07-16-2026 13:03:45", "NaN@NaNC"} {
		if _, err := ParseTegrastats(bad); err == nil || !strings.Contains(err.Error(), "not a tegrastats line") {
			t.Errorf("%q: want a clear error, got %v", bad, err)
		}
	}
}

func FuzzParseTegrastats(f *testing.F) {
	for _, s := range []string{fakehw.OrinNXLine, fakehw.AGXOrinLine, fakehw.JetPack5Fragment, fakehw.AGXThorLine,
		"gpu@47.625C/47.625C", "tj@1C/", "x@1C/2C/3C", "RAM 1/2MB (lfb 1x4MB", "CPU [", "GR3D_FREQ 1%@[", "VDD_IN -1/-2/-3", "(", "x@C", "IRAM 0/252kB(lfb 252kB)"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		s, err := ParseTegrastats(line)
		if err != nil {
			return
		}
		if _, err := json.Marshal(s); err != nil {
			t.Errorf("%q: sample does not encode: %v", line, err)
		}
	})
}

func smiLine() (fields []string, line string) {
	return smiFields(), "2026/11/29 15:20:01.123, 0, 87, 85012, 97887, 287.45, 300.00, 71, 2430, 13365, 0x0000000000000004, P1"
}

func TestParseNvidiaSMI(t *testing.T) {
	fields, line := smiLine()
	s, err := ParseNvidiaSMI(fields, line)
	if err != nil {
		t.Fatal(err)
	}
	if want := time.Date(2026, 11, 29, 15, 20, 1, 123e6, time.Local); !s.Time.Equal(want) {
		t.Errorf("time %v", s.Time)
	}
	if !near(s.GPUUtil, 87) || !near(s.MemUsedMB, 85012) || !near(s.MemTotalMB, 97887) ||
		!near(s.PowerW, 287.45) || !near(s.TempC, 71) {
		t.Errorf("got util %s mem %s/%s power %s temp %s", show(s.GPUUtil), show(s.MemUsedMB),
			show(s.MemTotalMB), show(s.PowerW), show(s.TempC))
	}
	if !reflect.DeepEqual(s.Throttle, []string{"sw_power_cap"}) {
		t.Errorf("throttle %v", s.Throttle)
	}
	for k, v := range map[string]float64{"gpu_index": 0, "power_limit_w": 300, "sm_mhz": 2430, "mem_mhz": 13365, "pstate": 1, "clocks_event_reasons": 4} {
		if s.Extra[k] != v {
			t.Errorf("Extra[%s] = %v, want %v", k, s.Extra[k], v)
		}
	}

	na := "2026/11/29 15:20:01.123, 1, [N/A], 1, 2, [Not Supported], [N/A], 40, [N/A], [N/A], 0x0000000000000001, P8"
	s, err = ParseNvidiaSMI(fields, na)
	if err != nil {
		t.Fatal(err)
	}
	if s.GPUUtil != nil || s.PowerW != nil || len(s.Throttle) != 0 || !near(s.TempC, 40) {
		t.Errorf("N/A must be nil and gpu_idle is no throttling: %+v", s)
	}

	for _, tc := range []struct{ line, want string }{
		{"2026/11/29 15:20:01.123, 0, 87", "3 values where 12"},
		{strings.Replace(line, " 287.45,", " lots,", 1), "power.draw"},
		{strings.Replace(line, "0x0000000000000004", "0xZZ", 1), "hex bitmask"},
		{strings.Replace(line, "P1", "Q1", 1), "pstate"},
		{strings.Replace(line, "2026/11/29", "yesterday", 1), "timestamp"},
		{strings.Replace(line, " 71,", " NaN,", 1), "temperature.gpu"},
	} {
		if _, err := ParseNvidiaSMI(fields, tc.line); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want one naming %q", tc.line, err, tc.want)
		}
	}
}

func TestDecodeClockEventReasons(t *testing.T) {
	got := DecodeClockEventReasons(0x1 | 0x4 | 0x40 | 0x100 | 0x1000)
	want := []string{"gpu_idle", "sw_power_cap", "hw_thermal_slowdown", "display_clock_setting", "bit_12"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	for name, thr := range map[string]bool{"gpu_idle": false, "applications_clocks_setting": false,
		"display_clock_setting": false, "sw_power_cap": true, "hw_slowdown": true, ThrottleThermal: true} {
		if IsThrottling(name) != thr {
			t.Errorf("IsThrottling(%s) != %v", name, thr)
		}
	}
}

func FuzzParseNvidiaSMI(f *testing.F) {
	_, line := smiLine()
	f.Add(line)
	f.Add("[N/A], [N/A], [N/A], [N/A], [N/A], [N/A], [N/A], [N/A], [N/A], [N/A], [N/A], [N/A]")
	f.Add(",,,,,,,,,,,")
	f.Fuzz(func(t *testing.T, line string) {
		s, err := ParseNvidiaSMI(smiFields(), line)
		if err != nil {
			return
		}
		if _, err := json.Marshal(s); err != nil {
			t.Errorf("%q: sample does not encode: %v", line, err)
		}
	})
}

func f64(v float64) *float64 { return &v }

func TestCombineGPUs(t *testing.T) {
	a := protocol.TelemetrySample{GPUUtil: f64(10), PowerW: f64(100), TempC: f64(40), MemUsedMB: f64(1000),
		MemTotalMB: f64(97887), Throttle: []string{"sw_power_cap"}, Extra: map[string]float64{"gpu_index": 0, "sm_mhz": 2000}}
	b := protocol.TelemetrySample{GPUUtil: f64(30), PowerW: f64(200), TempC: f64(55), MemUsedMB: f64(3000),
		MemTotalMB: f64(97887), Throttle: []string{"hw_slowdown"}, Extra: map[string]float64{"gpu_index": 1}}
	c := CombineGPUs([]protocol.TelemetrySample{a, b})
	if !near(c.GPUUtil, 20) || !near(c.PowerW, 300) || !near(c.TempC, 55) || !near(c.MemUsedMB, 4000) || !near(c.MemTotalMB, 2*97887) {
		t.Errorf("combined %+v", c)
	}
	if !reflect.DeepEqual(c.Throttle, []string{"hw_slowdown", "sw_power_cap"}) {
		t.Errorf("throttle %v", c.Throttle)
	}
	for k, v := range map[string]float64{"gpu0_util": 10, "gpu1_power_w": 200, "gpu1_temp_c": 55, "gpu0_sm_mhz": 2000, "gpus": 2} {
		if c.Extra[k] != v {
			t.Errorf("Extra[%s] = %v, want %v", k, c.Extra[k], v)
		}
	}
}

func TestSummarize(t *testing.T) {
	samples := []protocol.TelemetrySample{
		{GPUUtil: f64(20), PowerW: f64(100), TempC: f64(50), MemUsedMB: f64(1000), Throttle: []string{"gpu_idle"}},
		{GPUUtil: f64(80), PowerW: f64(300), TempC: f64(70), MemUsedMB: f64(3000), Throttle: []string{"sw_power_cap"}},
		{GPUUtil: f64(50), TempC: f64(60), MemUsedMB: f64(2000), Throttle: []string{ThrottleThermal, "sw_power_cap"}},
		{}, // a sample with nothing counts but changes no figure
	}
	s := Summarize(samples, SourceNvidiaSMI)
	if s.Samples != 4 || s.Source != SourceNvidiaSMI {
		t.Errorf("samples %d source %q", s.Samples, s.Source)
	}
	if !near(s.GPUUtilMean, 50) || !near(s.GPUUtilMax, 80) || !near(s.PowerMeanW, 200) || !near(s.PowerMaxW, 300) ||
		!near(s.TempMaxC, 70) || !near(s.MemPeakMB, 3000) {
		t.Errorf("got util %s/%s power %s/%s temp %s mem %s", show(s.GPUUtilMean), show(s.GPUUtilMax),
			show(s.PowerMeanW), show(s.PowerMaxW), show(s.TempMaxC), show(s.MemPeakMB))
	}
	if !s.Throttled || !reflect.DeepEqual(s.Throttle, []string{"sw_power_cap", ThrottleThermal}) {
		t.Errorf("throttled %v %v", s.Throttled, s.Throttle)
	}

	idle := Summarize([]protocol.TelemetrySample{{Throttle: []string{"gpu_idle"}}}, SourceNvidiaSMI)
	if idle.Throttled || idle.GPUUtilMean != nil || idle.PowerMaxW != nil {
		t.Errorf("idle summary %+v", idle)
	}
	if empty := Summarize(nil, SourceHost); empty == nil || empty.Samples != 0 || empty.Throttled {
		t.Errorf("empty summary %+v", empty)
	}
}
