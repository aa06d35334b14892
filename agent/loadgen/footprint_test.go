package loadgen_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"

	"github.com/vlmfleet/vlmfleet/agent/imageset"
	"github.com/vlmfleet/vlmfleet/agent/loadgen"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// discardingEngine answers every request with one token after reading and
// dropping its body, so that what the process allocates is the client's.
func discardingEngine(t *testing.T) loadgen.Target {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, `data: {"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"A"},"finish_reason":"stop"}]}`+"\n\n"+
			`data: {"id":"x","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":10,"completion_tokens":1,"total_tokens":11}}`+"\n\n"+
			"data: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	return loadgen.Target{BaseURL: srv.URL + "/v1", Model: "fake-vlm"}
}

// Unique pictures cost the client what the fixed set costs: at 16 cameras
// x 2K x 160 requests a level with unique pictures allocates at most 32 KB
// per request more than the same level with the builtin set, where a copy
// of a 2K picture is about a megabyte and one decoded and encoded again
// several. Bytes allocated, unlike CPU time, do not move with a loaded
// machine.
func TestUniquePicturesAllocateWhatTheFixedSetDoes(t *testing.T) {
	if raceDetector {
		t.Skip("bytes allocated, not concurrency: run without -race (./scripts/test does so first)")
	}
	set, err := imageset.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	// Both ways prepared before anything is counted, as on a device that
	// measured before.
	if _, err := set.DataURL("2K", 0); err != nil {
		t.Fatal(err)
	}
	if _, _, err := set.UniquePicture("2K", 0, 1); err != nil {
		t.Fatal(err)
	}
	target := discardingEngine(t)
	allocated := func(unique bool) uint64 {
		w := protocol.Workload{
			Prompt: protocol.DefaultPrompt, MaxTokens: 8,
			Sizes: []string{"2K"}, Cameras: []int{16}, RequestsPerLevel: 160,
			WarmupRequests: 1, RequestTimeoutSec: 60, UniqueImages: protocol.Set(unique),
		}
		pc := protocol.PlannedCombo{ComboKey: protocol.ComboKey{Size: "2K", Images: 1, Cameras: 16}, Requests: 160}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		c, err := loadgen.MeasureCombo(context.Background(), target, w, set, pc, loadgen.Hooks{})
		runtime.ReadMemStats(&after)
		if err != nil {
			t.Fatal(err)
		}
		if c.Failed > 0 || c.Completed != 160 {
			t.Fatalf("unique %v: completed %d, failed %d: %v", unique, c.Completed, c.Failed, c.Errors)
		}
		return after.TotalAlloc - before.TotalAlloc
	}
	fixed, unique := allocated(false), allocated(true)
	t.Logf("16 cameras x 2K x 160 requests: fixed pictures %.1f MB allocated, unique %.1f MB (%.2fx)",
		float64(fixed)/(1<<20), float64(unique)/(1<<20), float64(unique)/float64(fixed))
	const requests, perRequest = 16 + 160, 32 << 10 // the warm-up's and the level's
	if unique > fixed+requests*perRequest {
		t.Errorf("unique pictures allocated %d bytes, the fixed set %d: %d more per request, want at most %d",
			unique, fixed, (unique-fixed)/requests, perRequest)
	}
}
