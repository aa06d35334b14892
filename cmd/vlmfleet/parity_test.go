package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/vlmfleet/vlmfleet/agent/simengine"
	"github.com/vlmfleet/vlmfleet/harness/simlab"
	"github.com/vlmfleet/vlmfleet/harness/simtest"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// What bench measures is by construction what a lab job measures: a bench
// of the simulated engine (`vlmfleet sim`) and a lab job on an agent that
// simulates the same device, model and speed-up produce runs whose headers
// and combination keys match. Only what tells them apart may differ: ids,
// source, times, and how the engine was reached.
func TestBenchAndLabJobMeasureAlike(t *testing.T) {
	const (
		device  = "Jetson AGX Orin"
		model   = "Cosmos3-Edge"
		speedup = 20
	)
	p, err := simengine.Lookup(device, model, "", "")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	w := protocol.DefaultWorkload()
	w.Sizes, w.Cameras, w.RequestsPerLevel = []string{"480p"}, []int{1, 2}, 2
	w.MultiImageSizes, w.ImagesPerRequest, w.MultiImageRequests = []string{"480p"}, []int{1, 3}, 2
	w.MaxTokens = 8

	lab, err := simlab.Start(ctx, simlab.Options{DataDir: t.TempDir(), Log: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel), Version: version})
	if err != nil {
		t.Fatal(err)
	}
	defer lab.Close()
	if _, err := lab.AddAgent(ctx, simlab.Device{ID: "parity", Device: device, Models: []string{model}, Speedup: speedup}); err != nil {
		t.Fatal(err)
	}
	sw, err := lab.Submit(ctx, protocol.Sweep{Agents: []string{"parity"}, Workload: w})
	if err != nil {
		t.Fatal(err)
	}
	if err := lab.Wait(ctx, sw); err != nil {
		t.Fatal(err)
	}
	runs, err := lab.Controller().RunSummaries(ctx)
	if err != nil || len(runs) != 1 {
		t.Fatalf("lab runs: %d, %v; want one", len(runs), err)
	}
	job := runs[0]

	jsonPath := filepath.Join(t.TempDir(), "bench.json")
	code, out, errOut := runCLI(t, "bench", "--url", simtest.Serve(t, p, simengine.Options{Speedup: speedup, Seed: 1}), "--model", p.Model,
		"--params", strconv.FormatFloat(p.ParamsB, 'g', -1, 64), "--quantization", p.Quantization,
		"--sizes", "480p", "--cameras", "1,2", "--requests", "2", "--multi-sizes", "480p", "--images", "1,3",
		"--multi-requests", "2", "--max-tokens", "8", "--json", jsonPath)
	if code != 0 {
		t.Fatalf("bench: exit %d\n%s%s", code, out, errOut)
	}
	data, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	bench, err := protocol.DecodeRun(data)
	if err != nil {
		t.Fatal(err)
	}

	if job.Source != protocol.SourceLab || bench.Source != protocol.SourceBench || job.Status != protocol.RunCompleted || bench.Status != protocol.RunCompleted {
		t.Fatalf("lab run %s (%s), bench run %s (%s); want both completed", job.Source, job.Status, bench.Source, bench.Status)
	}
	same := func(what string, a, b any) {
		t.Helper()
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s differs:\n  lab job: %+v\n  bench:   %+v", what, a, b)
		}
	}
	same("schema", job.Schema, bench.Schema)
	same("configuration", job.Config, bench.Config)
	same("simulated", fmt.Sprint(job.Simulated, job.SimSpeedup), fmt.Sprint(bench.Simulated, bench.SimSpeedup))
	same("device", job.Device, bench.Device)
	same("workload", job.Workload, bench.Workload)
	same("engine name", job.Engine.Name, bench.Engine.Name)
	same("client", [4]any{job.Client.Name, job.Client.ImageSet, job.Client.ImageSetHash, job.Client.ImageCount},
		[4]any{bench.Client.Name, bench.Client.ImageSet, bench.Client.ImageSetHash, bench.Client.ImageCount})
	keys := func(r protocol.Run) []protocol.ComboKey {
		var ks []protocol.ComboKey
		for _, c := range r.Combinations {
			ks = append(ks, c.ComboKey)
		}
		return ks
	}
	same("combination keys", keys(job), keys(*bench))
	if !job.Simulated || job.SimSpeedup != speedup || job.Config.Device != device {
		t.Errorf("the lab run is not the simulated %s at ×%d: %+v", device, speedup, job.Config)
	}
	for i := range min(len(job.Combinations), len(bench.Combinations)) {
		jc, bc := job.Combinations[i], bench.Combinations[i]
		if (jc.Telemetry == nil) != (bc.Telemetry == nil) || jc.Completed != bc.Completed {
			t.Errorf("%s: lab %d completed (telemetry %v), bench %d (telemetry %v)", jc.ComboKey,
				jc.Completed, jc.Telemetry != nil, bc.Completed, bc.Telemetry != nil)
		}
	}
}
