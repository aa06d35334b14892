package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/protocol"
)

func ms(v float64) *float64 { return &v }

// profileRun is a run of two lines as the agent records them: ISL 1000 /
// OSL 1000 at 1120x1120, streamed, at three levels (the second the
// max-throughput one, its answers short of OSL), and OSL 200 with the
// prompt as written at 1648x2048, not streamed, at one level.
func profileRun() *protocol.Run {
	w := protocol.DefaultProfileWorkload()
	w.Profile.AutoCeiling = 4
	streamed := func(c int, ttft, itl, lat, rps float64) protocol.Combination {
		return protocol.Combination{
			ComboKey: protocol.ComboKey{Size: "1120x1120", Images: 1, Cameras: c, ISL: 1000, OSL: 1000}, Completed: 10,
			Profile: &protocol.ProfileLevel{LengthPair: protocol.LengthPair{ISL: 1000, OSL: 1000},
				Resolution: protocol.Resolution{Width: 1120, Height: 1120}, ImageFormat: "png", Concurrency: c, Stream: true,
				ImageTokens: 1601, PromptTokens: 2601, TTFTMs: ms(ttft), ITLMs: ms(itl), RequestLatencyMs: lat,
				RequestThroughput: rps, OutputTokensPerSec: rps * 1000, OSLHeld: true, OSLMean: 1000, ForcedBy: []string{"min_tokens", "ignore_eos"}},
		}
	}
	one, two, four := streamed(1, 198, 7.4, 7598, 0.13), streamed(2, 240, 29.3, 29530, 2.72), streamed(4, 300, 31, 31300, 2.75)
	two.Profile.MaxThroughput, two.Profile.OSLHeld, two.Profile.OSLMean, two.Profile.OSLShort = true, false, 812, 4
	four.Failed, four.Errors = 2, []protocol.ErrorCount{{Error: "HTTP 503", Count: 2}}
	parse := protocol.Combination{
		ComboKey: protocol.ComboKey{Size: "1648x2048", Images: 1, Cameras: 1, OSL: 200}, Completed: 10,
		Profile: &protocol.ProfileLevel{LengthPair: protocol.LengthPair{OSL: 200}, Resolution: protocol.Resolution{Width: 1648, Height: 2048},
			ImageFormat: "png", Concurrency: 1, RequestLatencyMs: 1234, RequestThroughput: 0.024, OSLHeld: true, OSLMean: 200,
			MaxThroughput: true, ForcedBy: []string{"min_tokens", "ignore_eos"}, SwitchesDropped: []string{"ignore_eos"}},
	}
	return &protocol.Run{Status: protocol.RunCompleted, Simulated: true, SimSpeedup: 10, Workload: w,
		Config:       protocol.Configuration{Model: "Llama-3.2-11B-Vision-Instruct", Quantization: "FP8", Engine: "vLLM", GPU: "H100-HBM3-80GB", GPUCount: 1, TP: 1},
		Engine:       protocol.EngineInfo{Version: "0.11.0", Endpoint: "http://127.0.0.1:8000/v1"},
		Combinations: []protocol.Combination{one, two, four, parse}}
}

func TestProfileSummaryIsThePagesTwoTables(t *testing.T) {
	var b bytes.Buffer
	writeProfileSummary(&b, profileRun())
	out := b.String()
	t.Log("\n" + out)
	for _, want := range []string{
		"Llama-3.2-11B-Vision-Instruct FP8 on H100-HBM3-80GB x1, TP1 (vLLM 0.11.0 at http://127.0.0.1:8000/v1), completed, SIMULATED engine (10x real time",
		"\nMin Latency (concurrency 1), SIMULATED\n",
		"     1000   1000  1120x1120 png         198      7.4        7598  ISL = text tokens; the image added 1601\n",
		// Not streamed: no TTFT, no ITL; no ISL, nothing said of it.
		"        -    200  1648x2048 png           -        -        1234\n",
		"\nMax Throughput, SIMULATED\n",
		"     1000   1000  1120x1120 png             2     29.3      2.72  OSL not held (mean 812); ISL = text tokens; the image added 1601\n",
		"        -    200  1648x2048 png             1        -     0.024\n",
		"     1000   1000  1120x1120 png       4    10      2       300     31.0       31300      2.75     2750.0\n",
		"      2x HTTP 503\n",
		"Max Throughput, --concurrency auto up to 4: " + protocol.ProfileAutoRule + ".\n",
		"OSL forced with min_tokens, ignore_eos.\n",
		"The server refused ignore_eos (HTTP 400)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the summary lacks %q", want)
		}
	}
	if strings.Count(out, " *\n") != 2 {
		t.Errorf("want the two max-throughput levels marked")
	}
}

// A line's figures say when they cannot be taken at face value: text
// tokens estimated, a level with no concurrency 1, one that failed, an
// engine that cannot force OSL.
func TestProfileSummaryQualifiesItsFigures(t *testing.T) {
	run := profileRun()
	run.Simulated = false
	run.Workload.Profile.AutoCeiling, run.Workload.Profile.Concurrency = 0, []int{2, 4}
	run.Combinations = run.Combinations[1:3]
	for i := range run.Combinations {
		p := run.Combinations[i].Profile
		p.TextTokensEstimated, p.ForcedBy, p.MaxThroughput = true, nil, false
	}
	run.Combinations[1].Completed = 0
	run.Combinations[1].Profile.MaxThroughput = true
	var b bytes.Buffer
	writeProfileSummary(&b, run)
	out := b.String()
	t.Log("\n" + out)
	for _, want := range []string{
		"     1000   1000  1120x1120 png    concurrency 1 not measured\n",
		"ISL estimated: the server reported no usage, one token a word",
		"     1000   1000  1120x1120 png             4        -         -  every request failed; ISL estimated",
		"Max Throughput: of the levels listed (2,4), the one the run marked.\n",
		"OSL not forced: the engine has no switch for it",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the summary lacks %q", want)
		}
	}
	if strings.Contains(out, "SIMULATED") || strings.Contains(out, "--concurrency auto") {
		t.Errorf("a measured run with listed levels is said simulated or auto")
	}
}

// `sweep --wait` and `sweep watch` answer a profile sweep with each run's
// tables, not the camera answer.
func TestSweepAnswerOfAProfileIsEachRunsTables(t *testing.T) {
	run := profileRun()
	run.ID = "run-p"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/runs" || r.URL.Query().Get("sweep") != "sw-p" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode([]protocol.Run{*run})
	}))
	t.Cleanup(srv.Close)
	var out, errb strings.Builder
	env := map[string]string{"VLMFLEET_CONTROLLER": srv.URL, "VLMFLEET_TOKEN": "t"}
	c := &cli{stdout: &out, stderr: &errb, getenv: func(k string) string { return env[k] }}
	cl, err := newClient(c, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if err := writeSweepAnswer(context.Background(), c, cl, api.SweepView{Sweep: protocol.Sweep{ID: "sw-p", Workload: run.Workload}}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "\nMin Latency (concurrency 1), SIMULATED\n") || strings.Contains(out.String(), "explorer at") {
		t.Errorf("answer:\n%s", out.String())
	}
}
