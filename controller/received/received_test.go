package received

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// recordedRun is a run as an agent reports it, with the request records
// it sends: the combination's counts match its records.
func recordedRun() protocol.Run {
	created := time.Unix(1700000000, 0).UTC()
	started := created.Add(time.Second)
	return protocol.Run{
		Schema: protocol.SchemaVersion, ID: "r1", Source: protocol.SourceBench, Status: protocol.RunCompleted,
		Config:    protocol.Configuration{Model: "Qwen3-VL-4B-Instruct", ParamsB: 4.4, Quantization: "Q8_0", Engine: "llama.cpp", Device: "Jetson AGX Orin"},
		Workload:  protocol.DefaultWorkload(),
		CreatedAt: created, StartedAt: started, FinishedAt: started.Add(time.Minute),
		Combinations: []protocol.Combination{{
			ComboKey: protocol.ComboKey{Size: "720p", Images: 1, Cameras: 1}, Width: 1280, Height: 720,
			StartedAt: started, FinishedAt: started.Add(30 * time.Second),
			Completed: 1, Failed: 1,
			Errors: []protocol.ErrorCount{{Error: "HTTP 500: boom", Count: 1}},
			TTFT:   protocol.Stats{N: 1, Mean: 1.3, P50: 1.3, P90: 1.3, P99: 1.3, Min: 1.3, Max: 1.3},
			TPS:    protocol.Stats{N: 1, Mean: 28},
			Requests: []protocol.RequestRecord{
				{Camera: 0, Seq: 0, Start: 0.01, TTFB: 0.2, RoleChunk: 0.3, TTFT: 1.3, LastToken: 5.8, E2E: 5.9,
					CompletionTokens: 128, TokenSource: protocol.TokensFromUsage, TPS: 28, ITL: 0.035, Images: 1,
					Timings: map[string]float64{"predicted_ms": 4500}, FinishReason: "length"},
				{Camera: 0, Seq: 1, Start: 6, TTFB: 0.1, E2E: 0.1, Images: 1, Error: "HTTP 500: boom"},
			},
		}},
	}
}

// agentSeries is a telemetry series as an agent on a Jetson writes one: a
// tegrastats sample a half second, with its rails and fields.
func agentSeries(n int) []protocol.TelemetrySample {
	f := func(v float64) *float64 { return &v }
	var s []protocol.TelemetrySample
	for i := range n {
		s = append(s, protocol.TelemetrySample{
			Time:    time.Date(2026, 12, 2, 1, 2, 3, i*5e8, time.UTC),
			GPUUtil: f(99), PowerW: f(44.325 + float64(i)), TempC: f(38.5), MemUsedMB: f(21985), MemTotalMB: f(62841), CPUUtil: f(0.125),
			Rails:    map[string]float64{"VDDQ_VDD2_1V8AO": 2.216, "VDD_CPU_CV": 6.648, "VDD_GPU_SOC": 22.162, "VIN_SYS_5V0": 15.513},
			Extra:    map[string]float64{"cpu0_mhz": 1728, "cpu0_util": 3, "gr3d_util": 99, "ram_used_mb": 21985, "temp_tj_c": 38.5},
			AgentCPU: f(12.345678901234), AgentRSSMB: f(63.2890625),
		})
	}
	s[0].Throttle = []string{"sw_thermal"}
	return s
}

// resultWithSeries is a result message whose combination carries a series.
func resultWithSeries(samples int) protocol.ResultMessage {
	r := recordedRun()
	m := protocol.ResultMessage{Schema: protocol.SchemaVersion, AgentID: "a1", Run: r}
	c := r.Combinations[0]
	c.TelemetrySeries = agentSeries(samples)
	m.Run.Combinations = nil
	m.Combination = &c
	return m
}

func TestDecodeKeepsSeriesAndRequestsAsSent(t *testing.T) {
	m := resultWithSeries(12)
	data, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Decode(data, nil)
	if err != nil {
		t.Fatal(err)
	}
	series, _ := json.Marshal(m.Combination.TelemetrySeries)
	requests, _ := json.Marshal(m.Combination.Requests)
	if !bytes.Equal(r.Series, series) {
		t.Errorf("series kept as\n%s\nwant it as sent\n%s", r.Series, series)
	}
	if !bytes.Equal(r.Requests, requests) {
		t.Errorf("requests kept as\n%s\nwant them as sent\n%s", r.Requests, requests)
	}
	if r.Combination.TelemetrySeries != nil {
		t.Error("the combination carries its series decoded too")
	}
	if !reflect.DeepEqual(r.Combination.Requests, m.Combination.Requests) {
		t.Errorf("requests decoded as %+v, want %+v", r.Combination.Requests, m.Combination.Requests)
	}
	back, err := DecodeSeries(r.Series)
	if err != nil || !reflect.DeepEqual(back, m.Combination.TelemetrySeries) {
		t.Errorf("the kept series reads back as %+v (%v), want %+v", back, err, m.Combination.TelemetrySeries)
	}
	if !seriesReadsAsSamples(series) {
		t.Error("an agent's series is not taken by the quick check: every message would be decoded twice")
	}
}

// A compressed message decodes as its JSON does, and a damaged one is
// refused as such.
func TestDecodeCompressed(t *testing.T) {
	js := []byte(mustJSON(t, resultWithSeries(12)))
	c := protocol.CompressPayload(js)
	plain, err := Decode(js, nil)
	if err != nil {
		t.Fatal(err)
	}
	packed, err := Decode(c, nil)
	if err != nil || !reflect.DeepEqual(packed, plain) {
		t.Errorf("a compressed message decodes as %+v (%v), want %+v", packed, err, plain)
	}
	damaged := append([]byte{}, c[:len(c)/2]...)
	if _, err := Decode(damaged, nil); err == nil || !strings.Contains(err.Error(), "compressed payload") {
		t.Errorf("a damaged compressed message: %v", err)
	}
}

func TestDecodeWithoutCombination(t *testing.T) {
	r := recordedRun()
	r.Combinations = nil
	for _, body := range []string{
		mustJSON(t, protocol.ResultMessage{Schema: protocol.SchemaVersion, AgentID: "a1", Run: r, Final: true, Expected: 3}),
		strings.Replace(mustJSON(t, protocol.ResultMessage{Schema: protocol.SchemaVersion, AgentID: "a1", Run: r, Final: true}), `"final":true`, `"combination":null,"final":true`, 1),
	} {
		m, err := Decode([]byte(body), nil)
		if err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		if m.Combination != nil || m.Series != nil || m.Requests != nil || !m.Final {
			t.Errorf("%s: decoded %+v", body, m)
		}
	}
	// Neither a combination nor final is refused, as before.
	_, err := Decode([]byte(mustJSON(t, protocol.ResultMessage{Schema: protocol.SchemaVersion, AgentID: "a1", Run: r})), nil)
	if err == nil || !strings.Contains(err.Error(), "neither") {
		t.Errorf("a message with nothing: %v", err)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A bad series or request record is refused with an error naming its line,
// column and field.
func TestDecodeNamesWhatIsWrong(t *testing.T) {
	good := mustJSON(t, resultWithSeries(2))
	cases := map[string]struct{ from, to, want string }{
		"rail not a number": {`"VDD_GPU_SOC":22.162`, `"VDD_GPU_SOC":"hot"`, `field "/combination/telemetry_series/0/rails/VDD_GPU_SOC"`},
		"time not a time":   {`"t":"2026-12-02T01:02:03Z"`, `"t":"yesterday"`, `field "/combination/telemetry_series/0/t"`},
		"figure too large":  {`"gpu_util":99`, `"gpu_util":1e400`, `/combination/telemetry_series/0/gpu_util`},
		"series an object":  {`"telemetry_series":[`, `"telemetry_series":{"x":[`, `/combination/telemetry_series`},
		"negative ttft":     {`"ttft":1.3,"last_token"`, `"ttft":-1.3,"last_token"`, `requests[0].ttft: -1.3, want 0 or more`},
		"request a string":  {`"requests":[`, `"requests":["x",`, `field "/combination/requests/0"`},
		"name twice":        {`"gpu_util":99`, `"gpu_util":99,"gpu_util":98`, `field "/combination/telemetry_series/0/gpu_util": duplicate object member name`},
		"syntax":            {`"gpu_util":99`, `"gpu_util":99,,`, `line 1 column`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			bad := strings.Replace(good, tc.from, tc.to, 1)
			if bad == good {
				t.Fatalf("%q is not in the message", tc.from)
			}
			if strings.HasSuffix(name, "object") {
				bad = strings.Replace(bad, `],"requests"`, `]},"requests"`, 1)
			}
			_, err := Decode([]byte(bad), nil)
			// A figure out of its range is found once decoded: its
			// error names the field, not a place in the text.
			located := !strings.HasPrefix(name, "negative")
			if err == nil || !strings.Contains(err.Error(), tc.want) || located != strings.Contains(err.Error(), "line ") {
				t.Errorf("got %v, want an error with %q (and its line: %v)", err, tc.want, located)
			}
		})
	}
}

// The quick check takes what agents send and leaves the rest to the
// decoder; what it takes, the decoder takes.
func TestSeriesReadsAsSamples(t *testing.T) {
	agent, _ := json.Marshal(agentSeries(3))
	for _, tc := range []struct {
		series string
		quick  bool
	}{
		{string(agent), true},
		{`null`, true},
		{`[]`, true},
		{` [ { "t" : "2026-12-02T01:02:03Z" , "rails" : { "a" : 1 } } ] `, true},
		{`[{"gpu_util":null,"rails":null,"extra":{"x":null},"throttle":null}]`, true},
		{`[{"t":"2026-12-02T01:02:03.123456789+05:30","throttle":["sw_thermal","é"]}]`, true},
		{`[{"gpu_util":-0,"power_w":1.5e-3,"temp_c":2E+2,"cpu_util":0.0}]`, true},
		{`[{"future_field":1}]`, false},  // a field samples do not have
		{`[null]`, false},                // the decoder takes it as a zero sample
		{`[{"gpu\u005futil":1}]`, false}, // an escaped name
		{`[{"throttle":["a\"b"]}]`, false},
		{`[{"throttle":["a",null]}]`, false},
		{`[{"gpu_util":"99"}]`, false},
		{`[{"rails":{"x":1e400}}]`, false},
		{`[{"rails":{"b":1,"a":2}}]`, false}, // not in encoding/json's order
		{`[{"rails":{"a":1,"a":2}}]`, false},
		{`[{"gpu_util":1,"gpu_util":2}]`, false},
		{`[{"t":"2026-13-02T01:02:03Z"}]`, false},
		{`[{"t":"2026-12-02T01:02:03,5Z"}]`, false},
		{`[{"t":"2026-12-02T01:02:03+24:00"}]`, false},
		{`[{"t":"2026-12-02T1:02:03Z"}]`, false},
		{`[{"t":null}]`, false},
		{`{"t":1}`, false},
		// Not JSON, which the decoder was to say before: now the quick
		// check must.
		{`[{"gpu_util":01}]`, false},
		{`[{"gpu_util":1.}]`, false},
		{`[{"gpu_util":.5}]`, false},
		{`[{"gpu_util":1e}]`, false},
		{`[{"gpu_util":-}]`, false},
		{`[{"gpu_util":1-2}]`, false},
		{`[{"gpu_util":1,}]`, false},
		{`[{"gpu_util":1}`, false},
		{`[{"gpu_util":1}]]`, false},
		{"[{\"throttle\":[\"a\tb\"]}]", false},
		{"[{\"throttle\":[\"\xff\"]}]", false},
		{`[{"gpu_util":nul}]`, false},
		{`[{"gpu_util":` + strings.Repeat("1", 305) + `}]`, true},  // 1.1e304
		{`[{"gpu_util":` + strings.Repeat("1", 310) + `}]`, false}, // 1.1e309: more than a float64 holds
	} {
		if got := seriesReadsAsSamples([]byte(tc.series)); got != tc.quick {
			t.Errorf("%s: quick check %v, want %v", tc.series, got, tc.quick)
		}
		if seriesReadsAsSamples([]byte(tc.series)) {
			var s []protocol.TelemetrySample
			if err := jsonv2.Unmarshal([]byte(tc.series), &s); err != nil {
				t.Errorf("%s: the quick check takes it, the decoder says %v", tc.series, err)
			}
		}
	}
}

// FuzzSeriesReadsAsSamples holds the quick check to its promise: what it
// takes, well formed or not, decodes into samples.
func FuzzSeriesReadsAsSamples(f *testing.F) {
	agent, _ := json.Marshal(agentSeries(2))
	f.Add(agent)
	f.Add([]byte(`[{"t":"2026-12-02T01:02:03Z","rails":{"a":1,"b":null},"throttle":["x"],"other":[{"q":"\""}]}]`))
	f.Add([]byte(`[{"gpu_util":-0.5e3,"extra":{}}]`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if !seriesReadsAsSamples(data) {
			return
		}
		var s []protocol.TelemetrySample
		if err := jsonv2.Unmarshal(data, &s); err != nil {
			t.Fatalf("the quick check takes %q, the decoder says %v", data, err)
		}
	})
}

// FuzzDecodeReceivedResult: what the decoder takes is a valid message
// whose kept parts read back (as the store reads them) as what was checked.
func FuzzDecodeReceivedResult(f *testing.F) {
	good, _ := json.Marshal(resultWithSeries(2))
	f.Add(good)
	f.Add(protocol.CompressPayload(good))
	r := recordedRun()
	r.Combinations = nil
	final, _ := json.Marshal(protocol.ResultMessage{Schema: protocol.SchemaVersion, AgentID: "a1", Run: r, Final: true})
	f.Add(final)
	f.Add([]byte(`{"schema":1,"agent_id":"a1","run":{"id":"r","config":{"model":"m"},"status":"running"},"combination":{"size":"480p","images":1,"cameras":1,"telemetry_series":[{"t":"2026-12-02T01:02:03Z"}],"requests":null}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Decode(data, nil)
		if err != nil {
			return
		}
		if m.Combination == nil {
			if m.Series != nil || m.Requests != nil {
				t.Fatal("parts kept for a message without a combination")
			}
			return
		}
		if err := m.Combination.Validate(); err != nil {
			t.Fatalf("took a combination that does not validate: %v", err)
		}
		if m.Series != nil {
			if _, err := DecodeSeries(m.Series); err != nil {
				t.Fatalf("kept a series %q that does not read back: %v", m.Series, err)
			}
		}
		if m.Requests != nil {
			rs, err := DecodeRequests(m.Requests)
			if err != nil || !reflect.DeepEqual(rs, m.Combination.Requests) {
				t.Fatalf("kept requests %q that read back as %+v (%v), not %+v", m.Requests, rs, err, m.Combination.Requests)
			}
		}
	})
}

// Through a cache, a header met before reads as it did, a changed one
// anew, and a bad one is refused as without the cache, naming its field.
func TestDecodeThroughHeaderCache(t *testing.T) {
	cache := NewHeaderCache(2)
	m := resultWithSeries(2)
	data := []byte(mustJSON(t, m))
	first, err := Decode(data, cache)
	if err != nil {
		t.Fatal(err)
	}
	again, err := Decode(data, cache)
	if err != nil || !reflect.DeepEqual(again, first) {
		t.Fatalf("the same message again: %+v, %v", again, err)
	}
	plain, _ := Decode(data, nil)
	if !reflect.DeepEqual(first, plain) {
		t.Errorf("through the cache %+v, without %+v", first, plain)
	}
	m.Run.Status, m.Run.Error = protocol.RunFailed, "engine died"
	changed, err := Decode([]byte(mustJSON(t, m)), cache)
	if err != nil || changed.Run.Status != protocol.RunFailed || changed.Run.Error != "engine died" {
		t.Errorf("a changed header read as %+v (%v)", changed.Run, err)
	}
	for _, c := range []*HeaderCache{cache, nil} {
		bad := strings.Replace(string(data), `"params_b":`, `"params_b":"four",`+`"x":`, 1)
		_, err := Decode([]byte(bad), c)
		if err == nil || !strings.Contains(err.Error(), `field "/run/config/params_b"`) || !strings.Contains(err.Error(), "line 1 column") {
			t.Errorf("a bad header (cache %v): %v", c != nil, err)
		}
	}
}

// An agent's message is decoded with its series cut out (decodeCut), and
// a message whose series is elsewhere than cutSeries looks, or one the
// quick check does not take, as it is: the same result either way.
func TestDecodeCut(t *testing.T) {
	agent := mustJSON(t, resultWithSeries(3))
	indented, _ := json.MarshalIndent(resultWithSeries(2), "", "  ")
	withHeaderSeries := resultWithSeries(2)
	hc := *withHeaderSeries.Combination
	withHeaderSeries.Run.Combinations = []protocol.Combination{hc} // a series before the combination's
	for _, tc := range []struct {
		name string
		msg  string
		cut  bool
	}{
		{"an agent's message", agent, true},
		{"indented, line ends in its series", string(indented), true},
		{"a null series", strings.Replace(agent, agent[strings.Index(agent, `"telemetry_series":`):strings.Index(agent, `,"requests"`)], `"telemetry_series":null`, 1), true},
		{"a series in the run header first", mustJSON(t, withHeaderSeries), false},
		{"a series the quick check leaves", strings.Replace(agent, `"gpu_util":99`, `"gpu_util":99,"future":1`, 1), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, err := decodeReceived([]byte(tc.msg), nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			m, ok := decodeCut([]byte(tc.msg), nil)
			if ok != tc.cut {
				t.Fatalf("decodeCut took it: %v, want %v", ok, tc.cut)
			}
			if ok && !reflect.DeepEqual(m, want) {
				t.Errorf("cut, it decodes as\n%+v\nas it is\n%+v", m, want)
			}
			got, err := Decode([]byte(tc.msg), nil)
			if err != nil || !reflect.DeepEqual(got, want) {
				t.Errorf("Decode = %+v, %v; want %+v", got, err, want)
			}
		})
	}
	// A message that is wrong after its series is refused as it always
	// was, its line and column those of the message as sent.
	bad := strings.Replace(string(indented), `"seq": 0,`, `"seq": "zero",`, 1)
	if bad == string(indented) || strings.Index(bad, `"zero"`) < strings.Index(bad, `"telemetry_series"`) {
		t.Fatal("no request record after the series to spoil")
	}
	_, errCut := Decode([]byte(bad), nil)
	_, errWhole := decodeReceived([]byte(bad), nil, nil)
	if errCut == nil || errWhole == nil || !strings.Contains(errCut.Error(), errWhole.Error()) {
		t.Errorf("a bad field after the series: %v, want %v", errCut, errWhole)
	}
}

// FuzzDecodeCut holds decodeCut to what it promises: a message it takes
// decodes, read as it is, into the same result.
func FuzzDecodeCut(f *testing.F) {
	good, _ := json.Marshal(resultWithSeries(2))
	f.Add(good)
	indented, _ := json.MarshalIndent(resultWithSeries(1), "", " ")
	f.Add(indented)
	f.Add([]byte(`{"schema":1,"agent_id":"a1","run":{"id":"r","config":{"model":"m"},"status":"running"},"combination":{"size":"480p","images":1,"cameras":1,"telemetry_series":[{"t":"2026-12-02T01:02:03Z"}],"requests":null}}`))
	f.Add([]byte(`{"schema":1,"agent_id":"a1","run":{"id":"r","config":{"model":"m"},"status":"running","error":"telemetry_series"},"combination":{"size":"480p","images":1,"cameras":1,"telemetry_series":[],"telemetry_series":[]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		cut, ok := decodeCut(data, nil)
		if !ok {
			return
		}
		whole, err := decodeReceived(data, nil, nil)
		if err != nil {
			t.Fatalf("cut, %q decodes; as it is: %v", data, err)
		}
		if !reflect.DeepEqual(cut, whole) {
			t.Fatalf("%q: cut, it decodes as\n%+v\nas it is\n%+v", data, cut, whole)
		}
	})
}
