package explorer

import (
	"errors"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/explorer/profiles"
	"github.com/vlmfleet/vlmfleet/protocol"
)

func TestHandlerProfilesPublished(t *testing.T) {
	srv := serve(t, runList{runs: handlerRuns()})
	var all protocol.ProfileRows
	if code, body := get(t, srv, "GET", PathProfiles, &all); code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", PathProfiles, code, body)
	}
	if len(all.Rows) != 65 {
		t.Fatalf("%d rows, want the seed's 65 published lines", len(all.Rows))
	}
	for i, r := range all.Rows {
		if r.Source != protocol.ProfileSourcePublished || r.Note != profiles.PublishedNote || r.Validate() != nil {
			t.Fatalf("rows[%d]: %+v (%v), want a valid published line", i, r, r.Validate())
		}
	}
	_, body := get(t, srv, "GET", PathProfiles, nil)
	if _, err := protocol.DecodeProfileRows([]byte(body)); err != nil {
		t.Errorf("the answer does not decode as the wire type: %v", err)
	}
	var some protocol.ProfileRows
	if code, body := get(t, srv, "GET", PathProfiles+"?model=90b&gpu=a100&precision=bf16&tp=8&profile=max_throughput", &some); code != http.StatusOK || len(some.Rows) != 3 {
		t.Fatalf("filtered: %d, %d rows, want 3: %s", code, len(some.Rows), body)
	}
	if r := some.Rows[2]; *r.ISL != 60000 || *r.ITLMs != 114.8 || *r.RequestThroughput != 0.04 || r.TTFTMs != nil || r.Concurrency != nil {
		t.Errorf("the last line: %+v, want ISL 60000, ITL 114.8, 0.04 req/s, no TTFT, no concurrency", r)
	}
}

func TestHandlerProfilesBadParameters(t *testing.T) {
	srv := serve(t, runList{runs: handlerRuns()})
	for q, want := range map[string]string{
		"?tp=x":         "tp: ",
		"?profile=best": "profile: ",
		"?gpu=":         "gpu: empty",
		"?cameras=4":    `unknown parameter \"cameras\"`,
		"?source=nim":   "source: ",
	} {
		code, body := get(t, srv, "GET", PathProfiles+q, nil)
		if code != http.StatusBadRequest || !strings.Contains(body, want) {
			t.Errorf("%s: %d %s, want 400 naming %q", q, code, body, want)
		}
	}
	if code, _ := get(t, srv, "POST", PathProfiles, nil); code != http.StatusMethodNotAllowed {
		t.Errorf("POST %s: %d, want 405", PathProfiles, code)
	}
}

// maxThroughputRun is a completed simulated run of the identity of the
// seed's second line (Llama-3.2-11B, H100-HBM3-80GB, FP8, TP1, ISL 1000,
// OSL 1000, 1120x1120 png) whose one level, at concurrency 16, is the
// max-throughput point at req/s.
func maxThroughputRun(id string, finished time.Time, reqPerSec float64) protocol.Run {
	size := protocol.Resolution{Width: 1120, Height: 1120}
	ttft, itl := 400.0, 9.5
	return protocol.Run{
		ID: id, Status: protocol.RunCompleted, Simulated: true, CreatedAt: finished, FinishedAt: finished,
		Config: protocol.Configuration{Model: "Llama-3.2-11B-Vision-Instruct", Quantization: "FP8", Engine: "vLLM",
			GPU: "H100-HBM3-80GB", GPUCount: 1, TP: 1},
		Combinations: []protocol.Combination{{
			ComboKey: protocol.ComboKey{Size: size.String(), Images: 1, Cameras: 16, ISL: 1000, OSL: 1000},
			Width:    1120, Height: 1120, Completed: 32,
			Profile: &protocol.ProfileLevel{
				LengthPair: protocol.LengthPair{ISL: 1000, OSL: 1000}, Resolution: size, ImageFormat: protocol.ImageFormatPNG,
				Concurrency: 16, Stream: true, TTFTMs: &ttft, ITLMs: &itl, RequestLatencyMs: ttft + itl*999,
				RequestThroughput: reqPerSec, OutputTokensPerSec: reqPerSec * 1000, OSLHeld: true, OSLMean: 1000, MaxThroughput: true,
			},
		}},
	}
}

// A run's measured line comes back after the published line of its
// identity, the newest run's; a store that fails is a 500 naming why.
func TestHandlerProfilesJoinsMeasuredLines(t *testing.T) {
	day := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	runs := append(handlerRuns(), maxThroughputRun("p-new", day.Add(time.Hour), 2.448), maxThroughputRun("p-old", day, 1))
	srv := serve(t, runList{runs: runs})
	var res protocol.ProfileRows
	if code, body := get(t, srv, "GET", PathProfiles+"?profile=max_throughput&precision=FP8&tp=1", &res); code != http.StatusOK {
		t.Fatalf("%d %s", code, body)
	}
	if len(res.Rows) != 2 || res.Rows[0].Source != protocol.ProfileSourcePublished || res.Rows[1].Source != protocol.ProfileSourceMeasured {
		t.Fatalf("%+v, want the published line then the measured one", res.Rows)
	}
	if m := res.Rows[1]; !m.Simulated || *m.Concurrency != 16 || m.Note != "run p-new; SIMULATED" {
		t.Errorf("the measured line: %+v, want the newer run's, simulated, at concurrency 16", m)
	}
	lines := profiles.Join(res.Rows[:1], res.Rows[1:])
	if d := lines[0].Diff().RequestThroughput; len(lines) != 1 || d == nil || math.Abs(*d-(-10)) > 1e-9 {
		t.Errorf("the measured line against the published: %v %%, want -10 %%", d)
	}
	var measured protocol.ProfileRows
	if code, body := get(t, srv, "GET", PathProfiles+"?source=measured", &measured); code != http.StatusOK || len(measured.Rows) != 1 {
		t.Errorf("?source=measured: %d, %d rows, want the one measured line: %s", code, len(measured.Rows), body)
	}
	srv = serve(t, runList{err: errors.New("bucket gone")})
	if code, body := get(t, srv, "GET", PathProfiles, nil); code != http.StatusInternalServerError || !strings.Contains(body, "bucket gone") {
		t.Errorf("a failing store: %d %s, want 500 naming it", code, body)
	}
}
