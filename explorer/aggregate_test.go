package explorer

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/protocol"
)

var t0 = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

func combo(size string, images, cameras int, ttft float64, completed, failed int) protocol.Combination {
	return protocol.Combination{
		ComboKey:  protocol.ComboKey{Size: size, Images: images, Cameras: cameras},
		Completed: completed, Failed: failed,
		TTFT:               protocol.Stats{N: completed, Mean: ttft, P90: ttft * 1.2},
		TPS:                protocol.Stats{N: completed, Mean: 25},
		OutputTokensPerSec: 25 * float64(cameras),
	}
}

// testRun is a completed run of Qwen3-VL-8B-Instruct Q8_0 under llama.cpp on
// a Jetson AGX Orin, finished at t0 plus the given minutes.
func testRun(id string, minutes int, status string, ttft1 float64) protocol.Run {
	return protocol.Run{
		Schema: protocol.SchemaVersion, ID: id, Source: protocol.SourceLab, Status: status,
		Config:    protocol.Configuration{Model: "Qwen3-VL-8B-Instruct", ParamsB: 8.8, Quantization: "Q8_0", Engine: "llama.cpp", Device: "Jetson AGX Orin"},
		Workload:  protocol.DefaultWorkload(),
		CreatedAt: t0.Add(time.Duration(minutes-30) * time.Minute), FinishedAt: t0.Add(time.Duration(minutes) * time.Minute),
		Engine: protocol.EngineInfo{Kind: "llamacpp", Name: "llama.cpp", Version: "b6100", Command: []string{"llama-server", "-m", "m.gguf"}},
		Device: protocol.DeviceFacts{Name: "Jetson AGX Orin", Kind: protocol.DeviceJetson,
			Jetson: &protocol.JetsonFacts{Model: "NVIDIA Jetson AGX Orin Developer Kit", L4T: "36.4.3", JetPack: "6.2", PowerMode: "MAXN"}},
		Combinations: []protocol.Combination{
			combo("720p", 1, 2, ttft1*1.5, 8, 0),
			combo("720p", 1, 1, ttft1, 8, 0),
			combo("1080p", 1, 1, ttft1*2, 8, 0),
			combo("480p", 1, 1, ttft1*0.8, 8, 0),
			combo("720p", 5, 1, ttft1*5, 5, 0),
		},
	}
}

func onlyRow(t *testing.T, ds Dataset) Row {
	t.Helper()
	if len(ds.Rows) != 1 {
		t.Fatalf("%d rows, want 1", len(ds.Rows))
	}
	return ds.Rows[0]
}

func TestAggregateLatestCompletedWins(t *testing.T) {
	runs := []protocol.Run{
		testRun("old", 0, protocol.RunCompleted, 2.0),
		testRun("new", 60, protocol.RunCompleted, 1.5),
		testRun("mid", 30, protocol.RunCompleted, 1.8),
		testRun("failed-later", 90, protocol.RunFailed, 0.1),
		testRun("running-later", 120, protocol.RunRunning, 0.1),
		testRun("cancelled-later", 150, protocol.RunCancelled, 0.1),
	}
	row := onlyRow(t, Aggregate(runs, t0))
	if row.Run.ID != "new" {
		t.Errorf("shows run %s, want the latest completed, new", row.Run.ID)
	}
	if p, _ := FindPoint(row.Points, "720p", 1, 1); p.TTFT != 1.5 {
		t.Errorf("720p 1 camera %g s, want 1.5 from run new", p.TTFT)
	}
	var others []string
	for _, o := range row.OtherRuns {
		others = append(others, o.ID)
	}
	if strings.Join(others, ",") != "mid,old" {
		t.Errorf("other runs %v, want mid,old (newest first; failed, running and cancelled runs are not rows' runs)", others)
	}
}

func TestAggregateFailedRunDoesNotReplace(t *testing.T) {
	row := onlyRow(t, Aggregate([]protocol.Run{testRun("good", 0, protocol.RunCompleted, 2), testRun("bad", 10, protocol.RunFailed, 1)}, t0))
	if row.Run.ID != "good" || len(row.OtherRuns) != 0 {
		t.Errorf("shows %s with %d other runs, want good alone", row.Run.ID, len(row.OtherRuns))
	}
	if ds := Aggregate([]protocol.Run{testRun("bad", 10, protocol.RunFailed, 1)}, t0); len(ds.Rows) != 0 {
		t.Errorf("a configuration with only a failed run has %d rows, want none", len(ds.Rows))
	}
}

func TestAggregatePartlyFailedRunIsCompleted(t *testing.T) {
	r := testRun("partial", 10, protocol.RunCompleted, 1)
	r.Combinations = append(r.Combinations, combo("720p", 1, 4, 0, 0, 8), combo("720p", 1, 8, 2.5, 6, 2))
	row := onlyRow(t, Aggregate([]protocol.Run{testRun("older", 0, protocol.RunCompleted, 2), r}, t0))
	if row.Run.ID != "partial" {
		t.Fatalf("shows %s, want partial", row.Run.ID)
	}
	if p, ok := FindPoint(row.Points, "720p", 1, 4); !ok || p.Completed != 0 || p.Failed != 8 || p.TTFT != 0 {
		t.Errorf("4 cameras, every request failed: %+v, want a point with 8 failed and no figures", p)
	}
	if m, plus := MaxCameras(row.Points, "720p", 1, 3); m != 8 || !plus {
		t.Errorf("Max Cameras %s, want 8+ (8 cameras passed with 6 of 8 requests)", MaxCamerasLabel(m, plus))
	}
	if m, plus := MaxCameras(row.Points, "720p", 1, 2); m != 2 || plus {
		t.Errorf("Max Cameras at 2 s %s, want 2: the failed 4-camera level counts as tested", MaxCamerasLabel(m, plus))
	}
	if p, ok := FindPoint(row.Points, "720p", 1, 8); !ok || p.Completed != 6 || p.Failed != 2 {
		t.Errorf("8 cameras: %+v, want 6 completed and 2 failed", p)
	}
	if !strings.Contains(row.Run.Requests, "failed") {
		t.Errorf("requests line %q", row.Run.Requests)
	}
}

func TestAggregateSimulatedIsItsOwnRow(t *testing.T) {
	real := testRun("real", 0, protocol.RunCompleted, 2)
	sim := testRun("sim", 60, protocol.RunCompleted, 0.5)
	sim.Simulated = true
	simEngine := testRun("sim-engine", 70, protocol.RunCompleted, 0.5)
	simEngine.Engine.Kind = "sim"
	ds := Aggregate([]protocol.Run{real, sim, simEngine}, t0)
	if len(ds.Rows) != 2 || ds.SimulatedRows != 1 {
		t.Fatalf("%d rows, %d simulated; want 2 and 1", len(ds.Rows), ds.SimulatedRows)
	}
	if ds.Rows[0].Simulated || ds.Rows[0].Run.ID != "real" {
		t.Errorf("first row %s simulated %v, want the real run", ds.Rows[0].Run.ID, ds.Rows[0].Simulated)
	}
	if !ds.Rows[1].Simulated || ds.Rows[1].Run.ID != "sim-engine" || !ds.Rows[1].Run.Simulated {
		t.Errorf("second row %s simulated %v, want sim-engine, simulated", ds.Rows[1].Run.ID, ds.Rows[1].Simulated)
	}
	if ds.Rows[0].ID == ds.Rows[1].ID {
		t.Error("real and simulated rows share an id")
	}
}

func TestAggregateIdentity(t *testing.T) {
	base := testRun("a", 0, protocol.RunCompleted, 1)
	variants := map[string]func(*protocol.Run){
		"model":  func(r *protocol.Run) { r.Config.Model = "Qwen3-VL-4B-Instruct" },
		"params": func(r *protocol.Run) { r.Config.ParamsB = 9 },
		"quant":  func(r *protocol.Run) { r.Config.Quantization = "Q4_K_M" },
		"engine": func(r *protocol.Run) { r.Config.Engine = "vLLM" },
		"device": func(r *protocol.Run) { r.Config.Device = "Jetson Orin NX" },
	}
	runs := []protocol.Run{base}
	for name, mod := range variants {
		r := testRun(name, 0, protocol.RunCompleted, 1)
		mod(&r)
		runs = append(runs, r)
	}
	ds := Aggregate(runs, t0)
	if len(ds.Rows) != 1+len(variants) {
		t.Fatalf("%d rows, want %d: each setting makes its own row", len(ds.Rows), 1+len(variants))
	}
	ids := map[string]bool{}
	for _, r := range ds.Rows {
		ids[r.ID] = true
	}
	if len(ids) != len(ds.Rows) {
		t.Error("row ids collide")
	}
	// Stable: the same configuration gets the same id whatever else is stored.
	again := onlyRow(t, Aggregate([]protocol.Run{testRun("other-run", 500, protocol.RunCompleted, 3)}, t0.Add(time.Hour)))
	want := onlyRow(t, Aggregate([]protocol.Run{base}, t0))
	if again.ID != want.ID || len(want.ID) != 16 {
		t.Errorf("ids %q and %q, want equal 16-character ids", again.ID, want.ID)
	}
	// Fallbacks: engine and device names from the engine and device facts.
	bare := testRun("bare", 0, protocol.RunCompleted, 1)
	bare.Config.Engine, bare.Config.Device = "", ""
	if r := onlyRow(t, Aggregate([]protocol.Run{bare}, t0)); r.Engine != "llama.cpp" || r.Device != "Jetson AGX Orin" {
		t.Errorf("fallback engine %q device %q", r.Engine, r.Device)
	}
}

func TestAggregatePointsAndMeta(t *testing.T) {
	r := testRun("a", 0, protocol.RunCompleted, 1)
	r.Combinations = append(r.Combinations, combo("2k", 1, 1, 3, 5, 0), combo("720p", 1, 1, 99, 8, 0), combo("4K", 1, 1, 1, 8, 0), combo("480p", 1, 2, 0, 0, 0))
	util, power, temp, mem := 87.4, 23.14, 61.0, 7987.0
	r.Combinations[1].Telemetry = &protocol.TelemetrySummary{Samples: 40, Source: "tegrastats", GPUUtilMean: &util, PowerMeanW: &power, TempMaxC: &temp, MemPeakMB: &mem, Throttled: true, Throttle: []string{"thermal"}}
	ds := Aggregate([]protocol.Run{r}, t0)
	row := onlyRow(t, ds)
	var keys []string
	for _, p := range row.Points {
		keys = append(keys, fmt.Sprintf("%s-%d-%d", p.Size, p.Images, p.Cameras))
	}
	if got := strings.Join(keys, " "); got != "480p-1-1 720p-1-1 720p-1-2 720p-5-1 1080p-1-1 2K-1-1" {
		t.Errorf("points %s: want sorted, 2k spelled 2K, the duplicate 720p, unknown 4K and empty 480p dropped", got)
	}
	if p, _ := FindPoint(row.Points, "720p", 1, 1); p.TTFT != 1 || p.TTFTP90 != 1.2 || p.TPS != 25 || p.Throughput != 25 || p.Completed != 8 {
		t.Errorf("720p point %+v", p)
	}
	m := row.Run
	if m.Platform != "JetPack 6.2 (L4T 36.4.3)" || m.PowerMode != "MAXN" || m.EngineVersion != "b6100" || len(m.EngineCommand) != 3 {
		t.Errorf("meta %+v", m)
	}
	if want := "GPU 87% mean, 23.1 W mean, 61 °C max, 7.8 GB memory peak, throttled (thermal) at 720p, 1 image, 1 camera, from tegrastats"; m.Telemetry != want {
		t.Errorf("telemetry %q\nwant      %q", m.Telemetry, want)
	}
	if want := "58 completed, 0 failed in 9 combinations; 8 per camera level, 5 per multi-image combination, 1 warm-up per camera first, up to 128 tokens"; m.Requests != want {
		t.Errorf("requests %q\nwant     %q", m.Requests, want)
	}
	if !m.Date.Equal(t0) {
		t.Errorf("date %v, want the finish time %v", m.Date, t0)
	}
	if len(ds.Sizes) != 4 || ds.Sizes[3] != "2K" || ds.Schema != SchemaVersion || !ds.Generated.Equal(t0) {
		t.Errorf("dataset header %+v", ds)
	}
}

func TestRunMetaDGPU(t *testing.T) {
	r := testRun("a", 0, protocol.RunCompleted, 1)
	r.FinishedAt = time.Time{}
	r.Device = protocol.DeviceFacts{Name: "RTX PRO 6000 Max-Q", Kind: protocol.DeviceDGPU, GPUs: []protocol.GPUFacts{{Driver: "580.65", CUDA: "13.0", DefaultPowerLimitW: 300}}}
	m := runMeta(&r)
	if m.Platform != "driver 580.65, CUDA 13.0" || m.PowerMode != "300 W power limit" || !m.Date.Equal(r.CreatedAt) || m.Telemetry != "" {
		t.Errorf("meta %+v", m)
	}
}

func TestAggregateEmpty(t *testing.T) {
	data, err := json.Marshal(Aggregate(nil, t0))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"rows":[]`) || !strings.Contains(string(data), `"sizes":["480p","720p","1080p","2K"]`) {
		t.Errorf("empty dataset %s: want rows [] (not null) and the four sizes", data)
	}
}

// FuzzAggregate feeds decoded result documents through everything the page
// and the rows API do with them: nothing may panic.
func FuzzAggregate(f *testing.F) {
	seed, _ := json.Marshal(testRun("a", 0, protocol.RunCompleted, 1))
	f.Add(seed)
	f.Add([]byte(`{"schema":1,"id":"x","config":{"model":"m"},"status":"completed","workload":{"prompt":"p","max_tokens":1,"sizes":["720p"],"cameras":[1],"requests_per_level":1},"combinations":[{"size":"720p","images":1,"cameras":1,"completed":1,"ttft":{"mean":1e308}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := protocol.DecodeRun(data)
		if err != nil {
			return
		}
		ds := Aggregate([]protocol.Run{*r, *r}, t0)
		for _, q := range []Query{DefaultQuery(), {Size: "2K", Cameras: 16, Images: 5, Target: 0.1}} {
			_ = Select(ds, q)
		}
		if _, err := json.Marshal(ds); err != nil {
			t.Fatalf("dataset does not encode: %v", err)
		}
	})
}

// benchRuns is 1,000 rows' worth of runs: two completed runs per
// configuration, each with every combination of the default plan.
func benchRuns() []protocol.Run {
	var runs []protocol.Run
	for i := range 1000 {
		for j := range 2 {
			r := testRun(fmt.Sprintf("r%d-%d", i, j), j*60, protocol.RunCompleted, 0.5+float64(i%7)*0.3)
			r.Config.Model = fmt.Sprintf("model-%03d", i/4)
			r.Config.Quantization = []string{"BF16", "FP8", "Q8_0", "Q4_K_M"}[i%4]
			r.Combinations = r.Combinations[:0]
			for _, k := range r.Workload.Plan() {
				r.Combinations = append(r.Combinations, combo(k.Size, k.Images, k.Cameras, 0.5*float64(k.Cameras*k.Images), 8, 0))
			}
			runs = append(runs, r)
		}
	}
	return runs
}

// BenchmarkAggregate measures building the dataset from 1,000 rows' worth of
// runs (two completed runs each, every combination of the default plan).
func BenchmarkAggregate(b *testing.B) {
	runs := benchRuns()
	b.ReportAllocs()
	b.ResetTimer()
	var ds Dataset
	for b.Loop() {
		ds = Aggregate(runs, t0)
	}
	if len(ds.Rows) != 1000 {
		b.Fatalf("%d rows", len(ds.Rows))
	}
	b.ReportMetric(float64(len(runs)), "runs")
}

// A profile level answers the Latency & throughput page's question; even
// keyed by a camera size it is no camera level.
func TestAggregateLeavesProfileLevelsToTheirPage(t *testing.T) {
	r := testRun("mixed", 0, protocol.RunCompleted, 1)
	prof := combo("720p", 1, 4, 0.2, 8, 0)
	prof.Profile = &protocol.ProfileLevel{LengthPair: protocol.LengthPair{ISL: 1000, OSL: 200}, Concurrency: 4, RequestThroughput: 3}
	r.Combinations = append(r.Combinations, prof)
	row := onlyRow(t, Aggregate([]protocol.Run{r}, t0))
	if p, ok := FindPoint(row.Points, "720p", 1, 4); ok {
		t.Errorf("the profile level is a camera point: %+v", p)
	}
	only := testRun("profile", 10, protocol.RunCompleted, 1)
	only.Combinations = []protocol.Combination{prof}
	only.Workload.Profile = &protocol.ProfileWorkload{Lengths: []protocol.LengthPair{{ISL: 1000, OSL: 200}}}
	if ds := Aggregate([]protocol.Run{only}, t0); len(ds.Rows) != 0 {
		t.Errorf("a run of profile levels only has %d camera rows, want none", len(ds.Rows))
	}
}
