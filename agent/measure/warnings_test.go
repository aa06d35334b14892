package measure

import (
	"context"
	"strings"
	"testing"

	"github.com/vlmfleet/vlmfleet/agent/engine"
	"github.com/vlmfleet/vlmfleet/agent/telemetry"
	"github.com/vlmfleet/vlmfleet/internal/testutil/fakellama"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// benchOf measures an attached endpoint as `vlmfleet bench` does.
func benchOf(t *testing.T, url string, w protocol.Workload) protocol.Run {
	t.Helper()
	spec := Spec{
		Run:       protocol.Run{ID: "b1", Source: protocol.SourceBench, Workload: w},
		Engine:    engine.Attach(engine.Endpoint{BaseURL: url, Model: "tiny"}, engine.Env{}),
		Images:    pictures(t),
		Device:    protocol.DeviceFacts{Name: "Build Host"},
		Telemetry: Telemetry{Source: telemetry.SourceOff},
	}
	run, err := Run(context.Background(), spec, Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// An attached llama-server is named by its /props, gets cache_prompt:false
// as a lab job's does, and so measures the picture, not the prompt cache.
// One with fewer slots than cameras is warned about.
func TestAttachedLlamaCppIsNamedAndMeasuredCacheFree(t *testing.T) {
	srv := fakellama.Start(t, fakellama.Options{Slots: 1})
	run := benchOf(t, srv.URL+"/v1", tinyWorkload()) // cameras 1 and 2
	if run.Config.Engine != engine.NameLlamaCpp || run.Engine.Version != fakellama.Build || run.Engine.Props["total_slots"] != "1" {
		t.Errorf("engine %q version %q props %v; want llama.cpp %s with its slots", run.Config.Engine, run.Engine.Version, run.Engine.Props, fakellama.Build)
	}
	bodies := srv.Requests()
	if len(bodies) == 0 {
		t.Fatal("no request reached the server")
	}
	for _, b := range bodies {
		if b["cache_prompt"] != false {
			t.Fatalf("a request without cache_prompt false: %v", b["cache_prompt"])
		}
	}
	for _, c := range run.Combinations {
		if c.CachedPromptTokens != 0 || c.CachedRequests != 0 {
			t.Errorf("%s: %d cached prompt tokens in %d requests, want none", c.ComboKey, c.CachedPromptTokens, c.CachedRequests)
		}
	}
	if len(run.Warnings) != 1 || !strings.Contains(run.Warnings[0], "1 slots") || !strings.Contains(run.Warnings[0], "up to 2 cameras") {
		t.Errorf("warnings %q, want one about 1 slot for 2 cameras", run.Warnings)
	}
}

// A server that serves repeated pictures from its cache although the run
// asked for none: every combination says how much, and the run warns.
func TestPromptCacheHitsInACacheFreeRunAreWarned(t *testing.T) {
	srv := fakellama.Start(t, fakellama.Options{Slots: 2, IgnoreCachePrompt: true})
	// More requests than there are pictures: the pictures repeat.
	w := tinyWorkload()
	w.RequestsPerLevel = 20
	run := benchOf(t, srv.URL+"/v1", w)
	if len(run.Combinations) != 2 {
		t.Fatalf("%d combinations", len(run.Combinations))
	}
	for _, c := range run.Combinations {
		if c.CachedRequests == 0 || c.CachedPromptTokens != 249*c.CachedRequests {
			t.Errorf("%s: %d cached prompt tokens in %d requests, want 249 of 250 in each hit", c.ComboKey, c.CachedPromptTokens, c.CachedRequests)
		}
	}
	if len(run.Warnings) != 2 {
		t.Fatalf("warnings %q, want one per combination", run.Warnings)
	}
	for i, w := range run.Warnings {
		if !strings.HasPrefix(w, run.Combinations[i].ComboKey.String()+": ") || !strings.Contains(w, "cache-free") {
			t.Errorf("warning %q", w)
		}
	}
	// Asked to use the cache, the same hits are what was asked for.
	yes := true
	w.CachePrompt = &yes
	if run := benchOf(t, srv.URL+"/v1", w); len(run.Warnings) != 0 {
		t.Errorf("warnings %q for a run that asked for the cache", run.Warnings)
	}
}

// A searched level above the server's slots measures its queue: the run
// is warned, in one message whatever the level, and only for such levels.
func TestSearchAboveTheSlotsIsWarned(t *testing.T) {
	info := protocol.EngineInfo{Props: map[string]string{"total_slots": "16"}}
	w := protocol.Workload{Search: 64}
	level := func(cams int, search bool) *protocol.Combination {
		return &protocol.Combination{ComboKey: protocol.ComboKey{Size: "720p", Images: 1, Cameras: cams}, Search: search}
	}
	above := searchSlotsWarning(info, w, level(32, true))
	if !strings.Contains(above, "above the 16 requests the server serves at once") || !strings.Contains(above, "ceiling of 64") {
		t.Errorf("32 cameras searched on 16 slots: %q", above)
	}
	if again := searchSlotsWarning(info, w, level(24, true)); again != above {
		t.Errorf("24 cameras: %q, want the same message as 32's", again)
	}
	for _, c := range []*protocol.Combination{level(16, true), level(32, false)} {
		if msg := searchSlotsWarning(info, w, c); msg != "" {
			t.Errorf("%s (search %v): %q, want none", c.ComboKey, c.Search, msg)
		}
	}
	if msg := searchSlotsWarning(protocol.EngineInfo{}, w, level(32, true)); msg != "" {
		t.Errorf("slots unknown: %q, want none", msg)
	}
	ollama := protocol.EngineInfo{Props: map[string]string{"num_parallel": "16"}}
	if msg := searchSlotsWarning(ollama, w, level(32, true)); msg != above {
		t.Errorf("Ollama with 16 in parallel: %q, want %q", msg, above)
	}
}
