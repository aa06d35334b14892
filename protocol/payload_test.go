package protocol

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

// resultWithSeries is a result message whose combination carries a
// telemetry series as an agent on a Jetson writes one, a sample a half
// second: most of such a message is its series.
func resultWithSeries(samples int) ResultMessage {
	f := func(v float64) *float64 { return &v }
	r := recordedRun()
	c := r.Combinations[0]
	for i := range samples {
		c.TelemetrySeries = append(c.TelemetrySeries, TelemetrySample{
			Time:    time.Date(2026, 12, 2, 1, 2, 3, i*5e8, time.UTC),
			GPUUtil: f(99), PowerW: f(44.325 + float64(i)), TempC: f(38.5), MemUsedMB: f(21985), MemTotalMB: f(62841), CPUUtil: f(0.125),
			Rails: map[string]float64{"VDDQ_VDD2_1V8AO": 2.216, "VDD_CPU_CV": 6.648, "VDD_GPU_SOC": 22.162, "VIN_SYS_5V0": 15.513},
			Extra: map[string]float64{"cpu0_mhz": 1728, "cpu0_util": 3, "gr3d_util": 99, "ram_used_mb": 21985, "temp_tj_c": 38.5},
		})
	}
	c.TelemetrySeries[0].Throttle = []string{"sw_thermal"}
	r.Combinations = nil
	return ResultMessage{Schema: SchemaVersion, AgentID: "a1", Run: r, Combination: &c}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestCompressedPayloads(t *testing.T) {
	m := resultWithSeries(12)
	js := []byte(mustJSON(t, m))
	c := CompressPayload(js)
	if !IsCompressed(c) || IsCompressed(js) || len(c) >= len(js)/2 {
		t.Fatalf("compressed %d bytes of JSON to %d (compressed %v)", len(js), len(c), IsCompressed(c))
	}
	if back, err := Uncompress(c); err != nil || !bytes.Equal(back, js) {
		t.Fatalf("uncompressed: %v", err)
	}
	if back, err := Uncompress(js); err != nil || !bytes.Equal(back, js) {
		t.Fatalf("JSON is its own payload: %v", err)
	}
	plain, err := DecodeResultMessage(js)
	if err != nil {
		t.Fatal(err)
	}
	want := m
	want.Run.Schema = m.Schema
	if !reflect.DeepEqual(*plain, want) {
		t.Errorf("DecodeResultMessage = %+v, want %+v", *plain, want)
	}
	packed, err := DecodeResultMessage(c)
	if err != nil || !reflect.DeepEqual(packed, plain) {
		t.Errorf("a compressed message decodes as %+v (%v), want %+v", packed, err, plain)
	}
	// What says it would be larger than a message may be is refused before
	// anything is made for it, and a damaged block is refused.
	bomb := append(append([]byte{}, payloadS2Magic...), binary.AppendUvarint(nil, MaxMessageBytes+1)...)
	if _, err := Uncompress(bomb); err == nil || !strings.Contains(err.Error(), "more than the") {
		t.Errorf("a payload of more than a message once uncompressed: %v", err)
	}
	damaged := append([]byte{}, c[:len(c)/2]...)
	if _, err := DecodeResultMessage(damaged); err == nil || !strings.Contains(err.Error(), "compressed payload") {
		t.Errorf("a damaged compressed message: %v", err)
	}
}
