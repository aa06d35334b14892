package protocol

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
)

// agentSeries is a telemetry series as an agent on a Jetson writes one: a
// tegrastats sample a half second, with its rails and fields.
func agentSeries(n int) []TelemetrySample {
	f := func(v float64) *float64 { return &v }
	var s []TelemetrySample
	for i := range n {
		s = append(s, TelemetrySample{
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
func resultWithSeries(samples int) ResultMessage {
	r := recordedRun()
	m := ResultMessage{Schema: SchemaVersion, AgentID: "a1", Run: r}
	c := r.Combinations[0]
	c.TelemetrySeries = agentSeries(samples)
	m.Run.Combinations = nil
	m.Combination = &c
	return m
}

func TestDecodeReceivedResultKeepsSeriesAndRequestsAsSent(t *testing.T) {
	m := resultWithSeries(12)
	data, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	r, err := DecodeReceivedResult(data, nil)
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
	back, err := DecodeTelemetrySeries(r.Series)
	if err != nil || !reflect.DeepEqual(back, m.Combination.TelemetrySeries) {
		t.Errorf("the kept series reads back as %+v (%v), want %+v", back, err, m.Combination.TelemetrySeries)
	}
	if !seriesReadsAsSamples(series) {
		t.Error("an agent's series is not taken by the quick check: every message would be decoded twice")
	}
	full, err := DecodeResultMessage(data)
	if err != nil {
		t.Fatal(err)
	}
	want := m
	want.Run.Schema = m.Schema
	if !reflect.DeepEqual(*full, want) {
		t.Errorf("DecodeResultMessage = %+v, want %+v", *full, want)
	}
}

func TestDecodeReceivedResultWithoutCombination(t *testing.T) {
	r := recordedRun()
	r.Combinations = nil
	for _, body := range []string{
		mustJSON(t, ResultMessage{Schema: SchemaVersion, AgentID: "a1", Run: r, Final: true, Expected: 3}),
		strings.Replace(mustJSON(t, ResultMessage{Schema: SchemaVersion, AgentID: "a1", Run: r, Final: true}), `"final":true`, `"combination":null,"final":true`, 1),
	} {
		m, err := DecodeReceivedResult([]byte(body), nil)
		if err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		if m.Combination != nil || m.Series != nil || m.Requests != nil || !m.Final {
			t.Errorf("%s: decoded %+v", body, m)
		}
	}
	// Neither a combination nor final is refused, as before.
	_, err := DecodeReceivedResult([]byte(mustJSON(t, ResultMessage{Schema: SchemaVersion, AgentID: "a1", Run: r})), nil)
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
func TestDecodeReceivedResultNamesWhatIsWrong(t *testing.T) {
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
			_, err := DecodeReceivedResult([]byte(bad), nil)
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
			var s []TelemetrySample
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
		var s []TelemetrySample
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
	f.Add(CompressPayload(good))
	r := recordedRun()
	r.Combinations = nil
	final, _ := json.Marshal(ResultMessage{Schema: SchemaVersion, AgentID: "a1", Run: r, Final: true})
	f.Add(final)
	f.Add([]byte(`{"schema":1,"agent_id":"a1","run":{"id":"r","config":{"model":"m"},"status":"running"},"combination":{"size":"480p","images":1,"cameras":1,"telemetry_series":[{"t":"2026-12-02T01:02:03Z"}],"requests":null}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := DecodeReceivedResult(data, nil)
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
			if _, err := DecodeTelemetrySeries(m.Series); err != nil {
				t.Fatalf("kept a series %q that does not read back: %v", m.Series, err)
			}
		}
		if m.Requests != nil {
			rs, err := DecodeRequestRecords(m.Requests)
			if err != nil || !reflect.DeepEqual(rs, m.Combination.Requests) {
				t.Fatalf("kept requests %q that read back as %+v (%v), not %+v", m.Requests, rs, err, m.Combination.Requests)
			}
		}
	})
}

// Through a cache, a header met before reads as it did, a changed one
// anew, and a bad one is refused as without the cache, naming its field.
func TestDecodeReceivedResultThroughHeaderCache(t *testing.T) {
	cache := NewHeaderCache(2)
	m := resultWithSeries(2)
	data := []byte(mustJSON(t, m))
	first, err := DecodeReceivedResult(data, cache)
	if err != nil {
		t.Fatal(err)
	}
	again, err := DecodeReceivedResult(data, cache)
	if err != nil || !reflect.DeepEqual(again, first) {
		t.Fatalf("the same message again: %+v, %v", again, err)
	}
	plain, _ := DecodeReceivedResult(data, nil)
	if !reflect.DeepEqual(first, plain) {
		t.Errorf("through the cache %+v, without %+v", first, plain)
	}
	m.Run.Status, m.Run.Error = RunFailed, "engine died"
	changed, err := DecodeReceivedResult([]byte(mustJSON(t, m)), cache)
	if err != nil || changed.Run.Status != RunFailed || changed.Run.Error != "engine died" {
		t.Errorf("a changed header read as %+v (%v)", changed.Run, err)
	}
	for _, c := range []*HeaderCache{cache, nil} {
		bad := strings.Replace(string(data), `"params_b":`, `"params_b":"four",`+`"x":`, 1)
		_, err := DecodeReceivedResult([]byte(bad), c)
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
	withHeaderSeries.Run.Combinations = []Combination{hc} // a series before the combination's
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
			got, err := DecodeReceivedResult([]byte(tc.msg), nil)
			if err != nil || !reflect.DeepEqual(got, want) {
				t.Errorf("DecodeReceivedResult = %+v, %v; want %+v", got, err, want)
			}
		})
	}
	// A message that is wrong after its series is refused as it always
	// was, its line and column those of the message as sent.
	bad := strings.Replace(string(indented), `"seq": 0,`, `"seq": "zero",`, 1)
	if bad == string(indented) || strings.Index(bad, `"zero"`) < strings.Index(bad, `"telemetry_series"`) {
		t.Fatal("no request record after the series to spoil")
	}
	_, errCut := DecodeReceivedResult([]byte(bad), nil)
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
