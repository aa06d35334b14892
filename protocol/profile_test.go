package protocol

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

func ptr[T any](v T) *T { return &v }

// validProfileRow is the seed's first line: Llama-3.2-11B on H100 at FP8, TP1, min latency.
func validProfileRow() ProfileRow {
	return ProfileRow{
		Model: "Llama-3.2-11B-Vision-Instruct", GPU: "H100-HBM3-80GB", GPUCount: 1, Precision: "FP8", TP: 1,
		Engine: "NIM", Profile: ProfileMinLatency, ISL: ptr(1000), OSL: 1000, Width: 1120, Height: 1120,
		ImageFormat: ImageFormatPNG, Concurrency: ptr(1), TTFTMs: ptr(198.0), ITLMs: ptr(7.4), RequestLatencyMs: ptr(7598.0),
		Source: ProfileSourcePublished, Note: "published (NVIDIA NIM, genai-perf)",
	}
}

func TestProfileRowValidate(t *testing.T) {
	if err := validProfileRow().Validate(); err != nil {
		t.Fatalf("the seed's first line: %v", err)
	}
	for _, tc := range []struct {
		name   string
		change func(*ProfileRow)
		want   string
	}{
		{"no model", func(r *ProfileRow) { r.Model = "" }, "model: empty"},
		{"control character in gpu", func(r *ProfileRow) { r.GPU = "H100\n" }, "gpu: "},
		{"long precision", func(r *ProfileRow) { r.Precision = strings.Repeat("x", MaxProfileName+1) }, "precision: 201 bytes"},
		{"no engine", func(r *ProfileRow) { r.Engine = "" }, "engine: empty"},
		{"no gpus", func(r *ProfileRow) { r.GPUCount = 0 }, "gpu_count: 0, want 1..1024"},
		{"tp above gpus", func(r *ProfileRow) { r.TP = 2 }, "tp: 2, want 1..gpu_count (1)"},
		{"unknown profile", func(r *ProfileRow) { r.Profile = "fast" }, `profile: "fast", want min_latency or max_throughput`},
		{"isl 0", func(r *ProfileRow) { r.ISL = ptr(0) }, "isl: 0, want 1..10000000, or null"},
		{"osl 0", func(r *ProfileRow) { r.OSL = 0 }, "osl: 0, want 1.."},
		{"wide image", func(r *ProfileRow) { r.Width = 8193 }, "width: 8193, want 1..8192 pixels"},
		{"no height", func(r *ProfileRow) { r.Height = 0 }, "height: 0"},
		{"webp", func(r *ProfileRow) { r.ImageFormat = "webp" }, `image_format: "webp", want png or jpeg`},
		{"concurrency 0", func(r *ProfileRow) { r.Concurrency = ptr(0) }, "concurrency: 0, want 1 or more"},
		{"min latency at 4", func(r *ProfileRow) { r.Concurrency = ptr(4) }, "concurrency: 4 on a min_latency line, want 1"},
		{"negative ttft", func(r *ProfileRow) { r.TTFTMs = ptr(-1.0) }, "ttft_ms: -1, want a finite number"},
		{"NaN itl", func(r *ProfileRow) { r.ITLMs = ptr(math.NaN()) }, "itl_ms: NaN"},
		{"min latency without latency", func(r *ProfileRow) { r.RequestLatencyMs = nil }, "request_latency_ms: null on a min_latency line"},
		{"max throughput without throughput", func(r *ProfileRow) { r.Profile, r.Concurrency = ProfileMaxThroughput, nil },
			"request_throughput: null on a max_throughput line"},
		{"unknown source", func(r *ProfileRow) { r.Source = "guessed" }, `source: "guessed", want published or measured`},
		{"simulated published", func(r *ProfileRow) { r.Simulated = true }, "simulated: true on a published line"},
	} {
		r := validProfileRow()
		tc.change(&r)
		if err := r.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
	r := validProfileRow()
	r.ISL, r.TTFTMs, r.ITLMs, r.Concurrency = nil, nil, nil, nil
	if err := r.Validate(); err != nil {
		t.Errorf("a line without ISL, TTFT, ITL and concurrency (nemoretriever-parse's): %v", err)
	}
}

// Figures not given are null on the wire, never left out or 0.
func TestProfileRowJSONHasEveryKey(t *testing.T) {
	r := validProfileRow()
	r.Profile, r.Concurrency, r.TTFTMs, r.RequestLatencyMs, r.RequestThroughput = ProfileMaxThroughput, nil, nil, nil, ptr(2.72)
	data, err := json.Marshal(ProfileRows{Rows: []ProfileRow{r}})
	if err != nil {
		t.Fatal(err)
	}
	var raw struct{ Rows []map[string]json.RawMessage }
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"model", "gpu", "gpu_count", "precision", "tp", "engine", "profile", "isl", "osl", "width", "height",
		"image_format", "concurrency", "ttft_ms", "itl_ms", "request_latency_ms", "request_throughput", "output_tokens_per_sec",
		"osl_held", "source", "simulated", "note"} {
		if _, ok := raw.Rows[0][key]; !ok {
			t.Errorf("key %q missing from %s", key, data)
		}
	}
	for _, key := range []string{"concurrency", "ttft_ms", "request_latency_ms", "output_tokens_per_sec", "osl_held"} {
		if string(raw.Rows[0][key]) != "null" {
			t.Errorf("%s: %s, want null", key, raw.Rows[0][key])
		}
	}
	back, err := DecodeProfileRows(data)
	if err != nil || len(back.Rows) != 1 || *back.Rows[0].RequestThroughput != 2.72 || back.Rows[0].TTFTMs != nil {
		t.Fatalf("round trip: %+v, %v", back, err)
	}
}

func TestDecodeProfileRowsNamesTheRow(t *testing.T) {
	good, _ := json.Marshal(validProfileRow())
	for _, tc := range []struct{ doc, want string }{
		{`{"rows":[` + string(good) + `,` + strings.Replace(string(good), `"png"`, `"gif"`, 1) + `]}`, `rows[1]: image_format: "gif"`},
		{`{}`, `no "rows" array`},
		{`{"rows":[]} {}`, "trailing data"},
		{`{"rows":[{"osl":"many"}]}`, `field "rows.osl"`},
		{``, "empty"},
	} {
		if _, err := DecodeProfileRows([]byte(tc.doc)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%.60s: %v, want %q", tc.doc, err, tc.want)
		}
	}
}

func FuzzDecodeProfileRows(f *testing.F) {
	good, _ := json.Marshal(ProfileRows{Rows: []ProfileRow{validProfileRow()}})
	f.Add(good)
	f.Add([]byte(`{"rows":[{"model":"m","gpu":"g","gpu_count":8,"precision":"BF16","tp":8,"engine":"e","profile":"max_throughput",` +
		`"isl":null,"osl":200,"width":1648,"height":2048,"image_format":"png","request_throughput":5.07,"source":"published"}]}`))
	f.Add([]byte(`{"rows":[{"isl":-1,"ttft_ms":1e400}]}`))
	f.Add([]byte(`{"rows":null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := DecodeProfileRows(data)
		if err != nil {
			return
		}
		for i, r := range v.Rows {
			if err := r.Validate(); err != nil {
				t.Fatalf("accepted rows[%d] %+v: %v", i, r, err)
			}
		}
		// What was accepted encodes and reads back the same.
		again, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("accepted %+v, which does not encode: %v", v, err)
		}
		if _, err := DecodeProfileRows(again); err != nil {
			t.Fatalf("accepted %s, but not its own encoding %s: %v", data, again, err)
		}
	})
}
