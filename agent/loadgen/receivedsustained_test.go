package loadgen_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/vlmfleet/vlmfleet/agent/imageset"
	"github.com/vlmfleet/vlmfleet/agent/loadgen"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// Every picture a run with unique pictures sends, its ladder's rounds and
// its search's sustained levels alike, decodes with Go's decoder to pixels
// no other picture of the run has and no builtin picture has: the
// warm-ups, the ramps, the requests before the window opens and each
// camera's last request after it closes included, though only the
// measured ones are recorded.
func TestEveryPictureOfASustainedRunDecodesApart(t *testing.T) {
	if raceDetector {
		t.Skip("decoded pixels, not concurrency: run without -race (./scripts/test does so first)")
	}
	set, err := imageset.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	w := protocol.Workload{
		Prompt: protocol.DefaultPrompt, MaxTokens: 128,
		Sizes: []string{"480p"}, Cameras: []int{1, 2, 4}, RequestsPerLevel: 4,
		WarmupRequests: 1, RequestTimeoutSec: 30, UniqueImages: protocol.Set(true),
		Search: 8, Judgement: protocol.Judgement{TargetSec: 30},
	}
	if err := w.Validate(); err != nil {
		t.Fatal(err)
	}
	e := newDecodingEngine(t, w)
	combos, err := loadgen.Measure(context.Background(), e.target(), w, set, e.hooks())
	if err != nil {
		t.Fatalf("Measure: %v", err)
	}
	measured, sustained := 0, 0
	for _, c := range combos {
		if c.Failed > 0 {
			t.Fatalf("%s: %d requests failed: %v", c.ComboKey, c.Failed, c.Errors)
		}
		measured += c.Completed
		if c.Sustained() {
			sustained++
		}
	}
	if sustained == 0 {
		t.Fatalf("no level of %d was measured sustained", len(combos))
	}
	seen := map[[32]byte]string{}
	for i := range set.Len() {
		u, err := set.DataURL("480p", i)
		if err != nil {
			t.Fatal(err)
		}
		img, err := decodeDataURL(u)
		if err != nil {
			t.Fatal(err)
		}
		seen[img.pixels] = fmt.Sprintf("builtin picture %d", i)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, rr := range e.got {
		for k, img := range rr.images {
			phase := "in its window"
			if rr.warmup {
				phase = "before its window"
			}
			where := fmt.Sprintf("engine request %d (%s, %s) image %d", rr.id, rr.combo, phase, k)
			if prev, dup := seen[img.pixels]; dup {
				t.Errorf("%s has the pixels of %s", where, prev)
			}
			seen[img.pixels] = where
		}
	}
	// The sustained levels' ramps and last requests are sent but not
	// measured: the engine saw more than the records hold.
	if len(e.got) <= measured {
		t.Errorf("the engine saw %d requests and %d were measured: the unmeasured ones were not sent", len(e.got), measured)
	}
	t.Logf("%d levels (%d sustained), %d pictures decoded, %d measured requests", len(combos), sustained, len(e.got), measured)
}
