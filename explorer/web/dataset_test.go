package web_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/explorer"
)

// testRow describes a configuration by its one-image 720p response time at
// each number of cameras tested; the other sizes and image counts follow from
// fixed factors, as a vision model's response time grows with pixels.
type testRow struct {
	id, model, quant, engine, device string
	params                           float64
	simulated                        bool
	ttft720                          []float64 // at cameras 1, 2, 4, 8, 16 (as many as tested)
	tps                              float64
	oneCameraOnly                    bool
}

func cameraLevels() []int { return []int{1, 2, 4, 8, 16} }

func sizeFactors() map[string]float64 {
	return map[string]float64{"480p": 0.7, "720p": 1, "1080p": 1.8, "2K": 2.6}
}

func (tr testRow) points() []explorer.Point {
	var pts []explorer.Point
	f := sizeFactors()
	for _, size := range []string{"480p", "720p", "1080p"} {
		for i, t := range tr.ttft720 {
			if tr.oneCameraOnly && i > 0 {
				break
			}
			c := cameraLevels()[i]
			ttft := t * f[size]
			if size == "720p" {
				ttft = t // the 720p figures are given exactly
			}
			pts = append(pts, explorer.Point{Size: size, Images: 1, Cameras: c, TTFT: ttft, TTFTP90: ttft * 1.1,
				TPS: tr.tps / (1 + 0.05*float64(c-1)), Completed: 8, Throughput: tr.tps * float64(c)})
		}
	}
	for _, size := range []string{"480p", "720p", "1080p", "2K"} {
		for _, n := range []int{1, 3, 5} {
			if n == 1 && size != "2K" {
				continue
			}
			ttft := tr.ttft720[0] * f[size] * (0.2 + 0.95*float64(n))
			pts = append(pts, explorer.Point{Size: size, Images: n, Cameras: 1, TTFT: ttft, TTFTP90: ttft * 1.1,
				TPS: tr.tps, Completed: 5, Throughput: tr.tps})
		}
	}
	return pts
}

// testRows are several devices, engines and quantizations, including the
// seed's example (Cosmos3-Edge on Jetson AGX Orin: 2 cameras at 1 s, 8+ at
// 3 s), a simulated row and a row measured with one camera only.
func testRows() []testRow {
	return []testRow{
		{id: "edge-agx", model: "Cosmos3-Edge", params: 3.9, quant: "BF16", engine: "vLLM", device: "Jetson AGX Orin", ttft720: []float64{0.51, 0.93, 1.6, 2.7}, tps: 45.6},
		{id: "q8b-q8-agx", model: "Qwen3-VL-8B-Instruct", params: 8.8, quant: "Q8_0", engine: "llama.cpp", device: "Jetson AGX Orin", ttft720: []float64{2.64, 4.1, 7.9, 15.2}, tps: 19.1},
		{id: "q8b-q4-agx", model: "Qwen3-VL-8B-Instruct", params: 8.8, quant: "Q4_K_M", engine: "llama.cpp", device: "Jetson AGX Orin", ttft720: []float64{2.75, 4.3, 8.2, 15.9}, tps: 25.2},
		{id: "q4b-vllm-rtx", model: "Qwen3-VL-4B-Instruct", params: 4.4, quant: "BF16", engine: "vLLM", device: "RTX PRO 6000", ttft720: []float64{0.16, 0.19, 0.24, 0.33, 0.46}, tps: 156.6},
		{id: "q4b-llama-rtx", model: "Qwen3-VL-4B-Instruct", params: 4.4, quant: "Q8_0", engine: "llama.cpp", device: "RTX PRO 6000", ttft720: []float64{0.25, 0.31, 0.45, 0.7, 1.09}, tps: 231.4},
		{id: "cr2b-nx", model: "Cosmos-Reason2-2B", params: 2.4, quant: "Q8_0", engine: "llama.cpp", device: "Jetson Orin NX", ttft720: []float64{2.02, 2.9, 5.5}, tps: 30.4},
		{id: "cr7b-nx", model: "Cosmos-Reason1-7B", params: 8.3, quant: "Q4_K_M", engine: "llama.cpp", device: "Jetson Orin NX", ttft720: []float64{7.68, 12.1, 23.5}, tps: 12},
		{id: "sim-rtx", model: "Simulated-VL-1B", params: 1.1, quant: "FP8", engine: "simulated", device: "RTX PRO 6000", simulated: true, ttft720: []float64{0.3, 0.35, 0.5, 0.8, 1.4}, tps: 120},
		{id: "g31-maxq", model: "Gemma-4-31B-it", params: 31, quant: "NVFP4", engine: "vLLM", device: "RTX PRO 6000 Max-Q", ttft720: []float64{0.27}, tps: 45.1, oneCameraOnly: true},
	}
}

func testDate(i int) time.Time {
	return time.Date(2026, 3, 2, 9, 40, 0, 0, time.UTC).Add(time.Duration(i) * time.Hour)
}

func buildRow(i int, tr testRow) explorer.Row {
	r := explorer.Row{
		RowConfig: explorer.RowConfig{ID: tr.id, Model: tr.model, ParamsB: tr.params, Quantization: tr.quant, Engine: tr.engine,
			Device: tr.device, Simulated: tr.simulated, Source: "lab"},
		Run: explorer.RunMeta{ID: "run-" + tr.id, Date: testDate(i), Source: "lab", Simulated: tr.simulated,
			EngineVersion: tr.engine + " 0.11.0", EngineCommand: []string{"serve", "--model", tr.model, "--max-num-seqs", "16"},
			Platform: "JetPack 6.2 (L4T 36.4.3)", PowerMode: "MAXN", Telemetry: "GPU 87% mean, 23.1 W mean, 61 °C max",
			Requests: "8 per camera level, 5 per multi-image combination"},
		Points: tr.points(),
	}
	if i%3 == 0 {
		r.OtherRuns = []explorer.RunMeta{{ID: "old-" + tr.id, Date: testDate(i).AddDate(0, -1, 0), Source: "lab", EngineVersion: "0.10.2"}}
	}
	r.Explanation = explorer.Explain(r)
	return r
}

func testDataset() explorer.Dataset {
	ds := explorer.Dataset{Schema: 1, Generated: testDate(100), Sizes: []string{"480p", "720p", "1080p", "2K"}}
	for i, tr := range testRows() {
		r := buildRow(i, tr)
		if r.Simulated {
			ds.SimulatedRows++
		}
		ds.Rows = append(ds.Rows, r)
	}
	return ds
}

// bigDataset has n rows for the performance measurement: many models on
// every device, engine and quantization.
func bigDataset(n int) explorer.Dataset {
	devices := []string{"Jetson Orin NX", "Jetson AGX Orin", "RTX PRO 6000", "RTX PRO 6000 Max-Q"}
	engines := []string{"vLLM", "llama.cpp", "external"}
	quants := []string{"BF16", "FP8", "NVFP4", "Q8_0", "Q4_K_M"}
	ds := explorer.Dataset{Schema: 1, Generated: testDate(0), Sizes: []string{"480p", "720p", "1080p", "2K"}}
	for i := range n {
		base := 0.1 + float64(i%37)*0.15
		levels := 3 + i%3
		ttft := make([]float64, levels)
		for j := range ttft {
			ttft[j] = base * (1 + 0.6*float64(j)*float64(1+i%4))
		}
		tr := testRow{id: fmt.Sprintf("row-%04d", i), model: fmt.Sprintf("Model-%03d-VL", i%180), params: 1 + float64(i%40),
			quant: quants[i%len(quants)], engine: engines[i%len(engines)], device: devices[i%len(devices)],
			simulated: i%50 == 0, ttft720: ttft, tps: 20 + float64(i%90)}
		r := buildRow(i, tr)
		if r.Simulated {
			ds.SimulatedRows++
		}
		ds.Rows = append(ds.Rows, r)
	}
	return ds
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	return b
}
