package profiles

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// profileLevel is a level of ISL 1000, OSL 1000 at 1120x1120 png, held,
// with request latency = TTFT + ITL × (OSL − 1).
func profileLevel(conc int, ttft, itl, tput float64, maxTput bool) protocol.Combination {
	size := protocol.Resolution{Width: 1120, Height: 1120}
	latency := ttft + itl*999
	return protocol.Combination{
		ComboKey:  protocol.ComboKey{Size: size.String(), Images: 1, Cameras: conc, ISL: 1000, OSL: 1000},
		Width:     1120,
		Height:    1120,
		Completed: 2 * conc,
		Profile: &protocol.ProfileLevel{
			LengthPair: protocol.LengthPair{ISL: 1000, OSL: 1000}, Resolution: size, ImageFormat: protocol.ImageFormatPNG,
			Concurrency: conc, Stream: true, ImageTokens: 1601, PromptTokens: 2601,
			TTFTMs: ptr(ttft), ITLMs: ptr(itl), RequestLatencyMs: latency,
			RequestThroughput: tput, OutputTokensPerSec: tput * 1000,
			OSLHeld: true, OSLMean: 1000, MaxThroughput: maxTput,
		},
	}
}

// profileRun is a completed run of Llama-3.2-11B on one H100 at FP8, TP1,
// that finished at finished: concurrency 1, 2, 4, 8 with 4 the
// max-throughput point.
func profileRun(id string, finished time.Time) protocol.Run {
	return protocol.Run{
		ID: id, Status: protocol.RunCompleted, CreatedAt: finished.Add(-time.Hour), FinishedAt: finished,
		Config: protocol.Configuration{Model: "Llama-3.2-11B-Vision-Instruct", Quantization: "FP8", Engine: "vLLM",
			Device: "H100 host", GPU: "H100-HBM3-80GB", GPUCount: 1, TP: 1},
		Engine: protocol.EngineInfo{Kind: "vllm", Name: "vLLM"},
		Combinations: []protocol.Combination{
			profileLevel(1, 218, 8.14, 0.12, false),
			profileLevel(2, 230, 8.3, 0.23, false),
			profileLevel(4, 250, 8.9, 0.44, true),
			profileLevel(8, 300, 16, 0.45, false),
		},
	}
}

func TestMeasuredMakesTheTwoLinesOfARun(t *testing.T) {
	run := profileRun("r-1", time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	rows, skipped := Measured([]protocol.Run{run})
	if len(skipped) != 0 || len(rows) != 2 {
		t.Fatalf("%d rows, skipped %v; want a min latency and a max throughput line", len(rows), skipped)
	}
	minLat, maxTput := rows[0], rows[1]
	if minLat.Profile != protocol.ProfileMinLatency || *minLat.Concurrency != 1 || *minLat.TTFTMs != 218 ||
		*minLat.ITLMs != 8.14 || math.Abs(*minLat.RequestLatencyMs-(218+8.14*999)) > 1e-9 || *minLat.RequestThroughput != 0.12 {
		t.Errorf("min latency: %+v, want concurrency 1's TTFT, ITL, latency and throughput", minLat)
	}
	if maxTput.Profile != protocol.ProfileMaxThroughput || *maxTput.Concurrency != 4 || *maxTput.ITLMs != 8.9 ||
		*maxTput.RequestThroughput != 0.44 || *maxTput.OutputTokensPerSec != 440 {
		t.Errorf("max throughput: %+v, want the marked level 4's figures", maxTput)
	}
	for _, r := range rows {
		if r.Model != "Llama-3.2-11B-Vision-Instruct" || r.GPU != "H100-HBM3-80GB" || r.GPUCount != 1 || r.TP != 1 ||
			r.Precision != "FP8" || r.Engine != "vLLM" || *r.ISL != 1000 || r.OSL != 1000 || r.Width != 1120 ||
			r.Height != 1120 || r.ImageFormat != "png" || !*r.OSLHeld || r.Source != protocol.ProfileSourceMeasured ||
			r.Simulated || r.Note != "run r-1" {
			t.Errorf("%s: %+v, want the run's identity, measured, held, noted with the run", r.Profile, r)
		}
	}
	// Each measured line finds the published line of its identity.
	published, err := Published()
	if err != nil {
		t.Fatal(err)
	}
	lines := Join(published, rows)
	if len(lines) != len(published) || lines[0].Measured == nil || lines[1].Measured == nil {
		t.Fatalf("joined: %d lines, the first two measured %v, %v; want both beside the seed's first two", len(lines), lines[0].Measured, lines[1].Measured)
	}
	if d := lines[0].Diff().TTFT; d == nil || math.Abs(*d-10.101) > 0.01 {
		t.Errorf("TTFT against the published 198 ms: %v %%, want +10.1 %%", d)
	}
}

// The newest run's line stands, by when the runs finished, whatever
// order the store lists them in; a run not completed makes none.
func TestMeasuredNewestRunWins(t *testing.T) {
	day := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	older, newer := profileRun("r-b", day), profileRun("r-a", day.Add(time.Hour))
	newer.Combinations[0].Profile.TTFTMs = ptr(199.0)
	// Created first, finished last: the store lists it first.
	newer.CreatedAt = day.Add(-2 * time.Hour)
	running := profileRun("r-c", day.Add(2*time.Hour))
	running.Status = protocol.RunRunning
	rows, _ := Measured([]protocol.Run{newer, older, running})
	if len(rows) != 2 {
		t.Fatalf("%d rows, want one per identity", len(rows))
	}
	for _, r := range rows {
		if r.Note != "run r-a" {
			t.Errorf("%s: from %q, want the run that finished last (r-a)", r.Profile, r.Note)
		}
	}
	if *rows[0].TTFTMs != 199 {
		t.Errorf("TTFT %v, want the newer run's 199", *rows[0].TTFTMs)
	}
	// Another image is another identity: both runs' lines stand.
	older.Combinations[0].Profile.Resolution = protocol.Resolution{Width: 640, Height: 480}
	if rows, _ := Measured([]protocol.Run{newer, older}); len(rows) != 3 {
		t.Errorf("%d rows, want 3: the older run's 640x480 line has no newer one", len(rows))
	}
}

// What a line's figures owe to the run is said: simulated, an answer
// short of OSL, a level without ISL; a line that is not a valid row is
// left out with its reason.
func TestMeasuredSaysWhatTheFiguresAre(t *testing.T) {
	run := profileRun("r-sim", time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	run.Simulated = true
	run.Config = protocol.Configuration{Model: "nemoretriever-parse", Device: "L40S host", TP: 2}
	run.Device.GPUs = []protocol.GPUFacts{{Name: "NVIDIA L40S"}}
	for i := range run.Combinations {
		p := run.Combinations[i].Profile
		p.ISL, p.OSLHeld, p.OSLMean, p.TTFTMs, p.ITLMs = 0, false, 812.4, nil, nil
	}
	bad := profileRun("r-bad", time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC))
	bad.Combinations[0].Profile.ImageFormat = "gif"
	rows, skipped := Measured([]protocol.Run{run, bad})
	if len(rows) != 3 {
		t.Fatalf("%d rows, want the simulated run's two and the other run's max throughput", len(rows))
	}
	r := rows[0]
	if !r.Simulated || r.ISL != nil || r.TTFTMs != nil || r.ITLMs != nil || *r.OSLHeld || r.Note != "run r-sim; SIMULATED; OSL not held (mean 812)" {
		t.Errorf("%+v (note %q), want simulated, no ISL, TTFT or ITL, OSL not held", r, r.Note)
	}
	if r.GPU != "NVIDIA L40S" || r.GPUCount != 2 || r.TP != 2 || r.Precision != Unknown || r.Engine != "vLLM" {
		t.Errorf("identity %s ×%d TP%d %s %s, want the device's GPU, counted at least TP, precision unknown, the engine's name",
			r.GPU, r.GPUCount, r.TP, r.Precision, r.Engine)
	}
	if len(skipped) != 1 || !strings.Contains(skipped[0].Error(), "run r-bad, min_latency") || !strings.Contains(skipped[0].Error(), "image_format") {
		t.Errorf("skipped %v, want r-bad's min latency line, naming image_format", skipped)
	}
	// A level that completed nothing has no figures to show.
	empty := profileRun("r-empty", time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC))
	empty.Combinations[2].Completed, empty.Combinations[2].Failed = 0, 8
	if rows, _ := Measured([]protocol.Run{empty}); len(rows) != 1 || rows[0].Profile != protocol.ProfileMinLatency {
		t.Errorf("%+v, want the min latency line alone: the marked level completed nothing", rows)
	}
}

// The tables' text says SIMULATED and "OSL not held" once for a measured
// line whose note says them.
func TestTablesSayAMeasuredLinesMarksOnce(t *testing.T) {
	run := profileRun("r-1", time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	run.Simulated = true
	run.Combinations[0].Profile.OSLHeld, run.Combinations[0].Profile.OSLMean = false, 640
	rows, _ := Measured([]protocol.Run{run})
	var out strings.Builder
	if err := WriteTables(&out, rows[:1]); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); !strings.Contains(got, "measured (run r-1; SIMULATED; OSL not held (mean 640))\n") ||
		strings.Count(got, "SIMULATED") != 1 || strings.Count(got, "OSL not held") != 1 {
		t.Errorf("the line's source:\n%s\nwant its note once, SIMULATED and OSL not held said once", got)
	}
}
