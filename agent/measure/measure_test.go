package measure

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/vlmfleet/vlmfleet/agent/engine"
	"github.com/vlmfleet/vlmfleet/agent/imageset"
	"github.com/vlmfleet/vlmfleet/agent/telemetry"
	"github.com/vlmfleet/vlmfleet/protocol"
)

func tinyWorkload() protocol.Workload {
	w := protocol.DefaultWorkload()
	w.Sizes, w.Cameras, w.RequestsPerLevel = []string{"480p"}, []int{1, 2}, 2
	w.MultiImageSizes, w.ImagesPerRequest = nil, nil
	w.MaxTokens = 8
	return w
}

func pictures(t *testing.T) *imageset.Set {
	t.Helper()
	imgs, err := imageset.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	return imgs
}

// A simulated engine's run is labelled, filed under the device it
// simulates rather than the machine it ran on, and every time a person
// reads (results and live progress alike) is on the device's scale.
func TestSimulatedRunIsLabelledFiledAndScaled(t *testing.T) {
	const speedup = 20
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	eng, err := engine.New(engine.Config{Kind: engine.KindSim, SimDevice: "Jetson AGX Orin", SimModel: "Cosmos3-Edge",
		SimQuantization: "BF16", SimEngine: "vLLM", SimSpeedup: speedup}, engine.Env{LogDir: t.TempDir(), Log: log})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var progress []protocol.Progress
	var samples int
	var phases []string
	spec := Spec{
		Run:       protocol.Run{ID: "r1", Source: protocol.SourceLab, Config: protocol.Configuration{Model: "Cosmos3-Edge"}, Workload: tinyWorkload()},
		Engine:    eng,
		Images:    pictures(t),
		Device:    protocol.DeviceFacts{Name: "Build Host", Kind: "host"},
		Telemetry: Telemetry{Source: telemetry.SourceAuto, Interval: 200 * time.Millisecond},
		Version:   "test",
		Log:       log,
	}
	run, err := Run(context.Background(), spec, Hooks{
		Opened:   func(protocol.Run) error { phases = append(phases, "opened"); return nil },
		Starting: func(protocol.Run) error { phases = append(phases, "starting"); return nil },
		Running:  func(protocol.Run) error { phases = append(phases, "running"); return nil },
		Progress: func(p protocol.Progress) { mu.Lock(); progress = append(progress, p); mu.Unlock() },
		Sample:   func(protocol.TelemetrySample) { mu.Lock(); samples++; mu.Unlock() },
		Combination: func(h protocol.Run, c *protocol.Combination) error {
			if h.ID != "r1" || len(h.Combinations) != 0 || !h.Simulated {
				t.Errorf("combination header %+v", h)
			}
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(phases, ",") != "opened,starting,running" {
		t.Errorf("hooks called %v, want opened, starting, running", phases)
	}
	if !run.Simulated || run.SimSpeedup != speedup || run.Status != protocol.RunCompleted || run.Schema != protocol.SchemaVersion {
		t.Errorf("run simulated %v ×%g, status %s", run.Simulated, run.SimSpeedup, run.Status)
	}
	if run.Config.Device != "Jetson AGX Orin" || run.Device.Kind != protocol.DeviceSimulated || run.Config.Engine != "vLLM" {
		t.Errorf("filed under %q (%s) with engine %q; want the simulated Jetson AGX Orin and vLLM", run.Config.Device, run.Device.Kind, run.Config.Engine)
	}
	if run.Client.Version != "test" || run.Client.ImageCount == 0 || run.StartedAt.IsZero() || run.FinishedAt.Before(run.StartedAt) {
		t.Errorf("client %+v, started %v, finished %v", run.Client, run.StartedAt, run.FinishedAt)
	}
	if len(run.Combinations) != 2 {
		t.Fatalf("%d combinations, want 2", len(run.Combinations))
	}
	last := map[protocol.ComboKey]float64{}
	for _, p := range progress {
		if !p.Simulated || p.RunID != "r1" {
			t.Errorf("progress %+v not labelled simulated and with its run", p)
		}
		if p.MeanTTFT > 0 {
			last[p.Combo] = p.MeanTTFT
		}
	}
	for _, c := range run.Combinations {
		if c.Completed == 0 || c.Telemetry == nil {
			t.Errorf("%s: %d completed, telemetry %v", c.ComboKey, c.Completed, c.Telemetry)
			continue
		}
		// Live progress and the stored result are on one scale: the last
		// mean shown is the mean stored.
		if got := last[c.ComboKey]; got < 0.99*c.TTFT.Mean || got > 1.01*c.TTFT.Mean {
			t.Errorf("%s: last progress mean TTFT %.3f s, result %.3f s", c.ComboKey, got, c.TTFT.Mean)
		}
	}
	if samples == 0 {
		t.Error("no telemetry sample reached the Sample hook")
	}
}

// cache_prompt is llama.cpp's own field: it goes to a llama.cpp, or to an
// endpoint the user named llama.cpp, and never to another server.
func TestCachePromptGoesOnlyToLlamaCpp(t *testing.T) {
	no := false
	w := protocol.Workload{CachePrompt: &no}
	for _, c := range []struct {
		info    protocol.EngineInfo
		display string
		send    bool
	}{
		{protocol.EngineInfo{Kind: engine.KindLlamaCpp, Name: "llama.cpp"}, "", true},
		{protocol.EngineInfo{Kind: engine.KindSim, Name: "llama.cpp"}, "", true},
		{protocol.EngineInfo{Kind: engine.KindExternal, Name: "external"}, "llama.cpp", true},
		{protocol.EngineInfo{Kind: engine.KindVLLM, Name: "vLLM"}, "", false},
		{protocol.EngineInfo{Kind: engine.KindExternal, Name: "external"}, "", false},
	} {
		field, v, ok := cachePrompt(w, c.info, c.display)
		if ok != c.send || v || (ok && field != "cache_prompt") {
			t.Errorf("%+v as %q: send %v (%v), want %v", c.info, c.display, ok, v, c.send)
		}
	}
	if _, _, ok := cachePrompt(protocol.Workload{}, protocol.EngineInfo{Kind: engine.KindLlamaCpp}, ""); ok {
		t.Error("cache_prompt sent though the workload leaves it unset")
	}
}

// The request timeout and a simulated device's sampling interval are in the
// device's time; a sped-up simulator gets them on the real scale.
func TestClockPutsBoundsOnTheRealScale(t *testing.T) {
	c := clock{speedup: 10}
	if got := c.workload(protocol.Workload{RequestTimeoutSec: 300}).RequestTimeoutSec; got != 30 {
		t.Errorf("timeout %g s, want 30", got)
	}
	if got := c.workload(protocol.Workload{}).RequestTimeoutSec; got != 0 {
		t.Errorf("no bound became %g s", got)
	}
	if got := c.interval(500*time.Millisecond, 20*time.Millisecond); got != 50*time.Millisecond {
		t.Errorf("interval %v, want 50ms", got)
	}
	if got := c.interval(100*time.Millisecond, 20*time.Millisecond); got != 20*time.Millisecond {
		t.Errorf("interval %v, want the 20ms floor", got)
	}
	if got := (clock{speedup: 1}).seconds(0.5); got != 0.5 {
		t.Errorf("real time scaled: %g", got)
	}
}

// An attached endpoint that is the simulator (a `vlmfleet sim`) is found
// out from its model list, and a request body to it carries no llama.cpp
// field unless the engine is one.
func TestAttachedEndpointSaysWhatItIs(t *testing.T) {
	var bodies []map[string]any
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/models":
			_, _ = w.Write([]byte(`{"data":[{"id":"m","simulated":true,"sim_speedup":4,"sim_device":"Jetson Orin NX","sim_engine":"vLLM"}]}`))
		case "/version":
			_, _ = w.Write([]byte(`{"version":"9.9"}`))
		case "/v1/chat/completions":
			var b map[string]any
			_ = json.NewDecoder(r.Body).Decode(&b)
			mu.Lock()
			bodies = append(bodies, b)
			mu.Unlock()
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = w.Write([]byte("data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\ndata: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":1}}\n\ndata: [DONE]\n\n"))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	w := tinyWorkload()
	w.Cameras = []int{1}
	spec := Spec{
		Run:       protocol.Run{ID: "b1", Source: protocol.SourceBench, Workload: w},
		Engine:    engine.Attach(engine.Endpoint{BaseURL: srv.URL + "/v1", Model: "m"}, engine.Env{}),
		Images:    pictures(t),
		Device:    protocol.DeviceFacts{Name: "Build Host"},
		Telemetry: Telemetry{Source: telemetry.SourceOff},
	}
	run, err := Run(context.Background(), spec, Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	if !run.Simulated || run.SimSpeedup != 4 || run.Config.Device != "Jetson Orin NX" || run.Engine.Version != "9.9" ||
		run.Config.Engine != "vLLM" || run.Engine.Kind != engine.KindExternal {
		t.Errorf("run simulated %v ×%g on %q, engine %q (%s) version %q", run.Simulated, run.SimSpeedup, run.Config.Device,
			run.Config.Engine, run.Engine.Kind, run.Engine.Version)
	}
	for _, b := range bodies {
		if _, ok := b["cache_prompt"]; ok {
			t.Errorf("cache_prompt sent to an engine that is not llama.cpp: %v", b)
		}
	}
	if len(bodies) == 0 {
		t.Error("no request reached the endpoint")
	}
}

// A run whose engine configuration was refused is opened, so that its
// caller can speak of it (its ids, the model and the engine as the caller
// named it), and ends failed with the reason, nothing started; even when
// its context ended meanwhile, since it could never have been measured.
func TestRefusedEngineConfigurationFailsTheRun(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var opened []protocol.Run
	var later []string
	run, err := Run(ctx, Spec{
		Run:     protocol.Run{ID: "j1-a1", JobID: "j1", Config: protocol.Configuration{Model: "m", Engine: engine.KindVLLM}},
		Refused: errors.New("model not found"),
		Device:  protocol.DeviceFacts{Name: "Orin"},
	}, Hooks{
		Opened:   func(h protocol.Run) error { opened = append(opened, h); return nil },
		Starting: func(protocol.Run) error { later = append(later, "starting"); return nil },
		Progress: func(protocol.Progress) { later = append(later, "progress") },
	})
	if err == nil || err.Error() != "engine configuration: model not found" {
		t.Fatalf("error %v", err)
	}
	if len(opened) != 1 || len(later) != 0 {
		t.Fatalf("opened %d times, then %v; want opened once and nothing else", len(opened), later)
	}
	h := opened[0]
	if h.ID != "j1-a1" || h.Config.Engine != engine.KindVLLM || h.Config.Device != "Orin" || h.Status != protocol.RunRunning ||
		h.StartedAt.IsZero() || h.Schema != protocol.SchemaVersion || h.Simulated {
		t.Errorf("header %+v", h)
	}
	if run.Status != protocol.RunFailed || run.Error != err.Error() || !run.StartedAt.Equal(h.StartedAt) || run.FinishedAt.Before(run.StartedAt) {
		t.Errorf("run %s (%q), started %v, finished %v", run.Status, run.Error, run.StartedAt, run.FinishedAt)
	}
}

// A run whose context ends ends as cancelled, with the reason the
// canceller gave; a hook that fails ends the run at once with its error.
func TestCancelledRunCarriesTheReason(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	reason := errors.New("cancelled by alice")
	spec := Spec{
		Run:    protocol.Run{ID: "r1", Workload: tinyWorkload()},
		Engine: engine.Attach(engine.Endpoint{BaseURL: "http://127.0.0.1:1/v1", Model: "m"}, engine.Env{}),
		Images: pictures(t),
	}
	run, err := Run(ctx, spec, Hooks{Starting: func(protocol.Run) error {
		cancel(reason)
		return ctx.Err()
	}})
	if !errors.Is(err, context.Canceled) || run.Status != protocol.RunCancelled || run.Error != reason.Error() {
		t.Errorf("run %s (%q), error %v; want cancelled with the reason", run.Status, run.Error, err)
	}

	// A plain cancel (Ctrl-C on bench) says what stopped the run.
	ctx, stop := context.WithCancel(context.Background())
	run, _ = Run(ctx, spec, Hooks{Opened: func(protocol.Run) error {
		stop()
		return ctx.Err()
	}})
	if run.Status != protocol.RunCancelled || run.Error != context.Canceled.Error() {
		t.Errorf("run %s (%q); want cancelled, saying so", run.Status, run.Error)
	}
}

// A simulated engine on a frame clock: the frames fall due on the device's
// interval (the simulator ticking as much faster as it runs), the key
// keeps that interval, the answers' age is on the device's scale, and the
// simulated device is busy only while it holds a frame.
func TestSimulatedPacedRunIsOnTheDevicesClock(t *testing.T) {
	// Twelve requests a level and a 20 ms telemetry clock give both
	// combinations a dozen samples or more: with two or three, one sample
	// taken between two back-to-back requests decides the test.
	const speedup, interval, requests = 10, 4.0, 12
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	eng, err := engine.New(engine.Config{Kind: engine.KindSim, SimDevice: "Jetson AGX Orin", SimModel: "Cosmos3-Edge",
		SimQuantization: "BF16", SimEngine: "vLLM", SimSpeedup: speedup}, engine.Env{LogDir: t.TempDir(), Log: log})
	if err != nil {
		t.Fatal(err)
	}
	w := tinyWorkload()
	w.Cameras, w.FrameIntervalSec, w.WarmupRequests, w.RequestsPerLevel = []int{1}, []float64{interval}, 0, requests
	run, err := Run(context.Background(), Spec{
		Run:       protocol.Run{ID: "r1", Source: protocol.SourceLab, Config: protocol.Configuration{Model: "Cosmos3-Edge"}, Workload: w},
		Engine:    eng,
		Images:    pictures(t),
		Device:    protocol.DeviceFacts{Name: "Build Host", Kind: "host"},
		Telemetry: Telemetry{Source: telemetry.SourceAuto, Interval: 20 * time.Millisecond},
		Log:       log,
	}, Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	if len(run.Combinations) != 2 {
		t.Fatalf("%d combinations, want back to back and paced", len(run.Combinations))
	}
	b2b, paced := run.Combinations[0], run.Combinations[1]
	if paced.ComboKey.String() != "480p-1img-1cam-every4s" || paced.Pacing == nil || paced.Pacing.FramesDue != requests {
		t.Fatalf("paced combination %s, pacing %+v", paced.ComboKey, paced.Pacing)
	}
	if err := paced.Validate(); err != nil {
		t.Errorf("paced combination not valid: %v", err)
	}
	for i, rec := range paced.Requests {
		// A tick late by 10 ms of real time is 0.1 s of the device's.
		if due := float64(i) * interval; rec.Start < due || rec.Start > due+0.5 {
			t.Errorf("frame %d sent at %.2f s of the device's time, due at %.0f s", i, rec.Start, due)
		}
	}
	if a := paced.Pacing.Age.Mean; a < paced.E2E.Mean || a > paced.E2E.Mean+0.5 {
		t.Errorf("age %.2f s, want the answer's %.2f s and the tick's lateness", a, paced.E2E.Mean)
	}
	if got, alone := paced.TTFT.Mean, b2b.TTFT.Mean; got < 0.9*alone || got > 1.1*alone {
		t.Errorf("paced TTFT %.2f s, one camera back to back %.2f s", got, alone)
	}
	t.Logf("TTFT %.3f/%.3f, age %.3f e2e %.3f, busy %.2f/%.2f of %d/%d samples", paced.TTFT.Mean, b2b.TTFT.Mean, paced.Pacing.Age.Mean, paced.E2E.Mean,
		busyShare(paced), busyShare(b2b), len(paced.TelemetrySeries), len(b2b.TelemetrySeries))
	// One answer of 0.37 s every 4 s: idle nine tenths of the device's
	// time, where one camera back to back keeps it busy but for the
	// client's moments between answers. The samples are taken on the
	// host's clock, on which a slow client (the race detector's) holds
	// each request longer: hence the margins.
	if l, b := busyShare(paced), busyShare(b2b); l > 0.4 || l > b/2 || b < 0.6 {
		t.Errorf("simulated device busy in %.2f of the samples paced, %.2f back to back; want mostly idle and mostly busy", l, b)
	}
}

// busyShare is the share of c's telemetry samples taken while the
// simulated device held a request.
func busyShare(c protocol.Combination) float64 {
	var busy int
	for _, s := range c.TelemetrySeries {
		if s.Extra["sim_load"] > 0 {
			busy++
		}
	}
	return float64(busy) / float64(max(1, len(c.TelemetrySeries)))
}
