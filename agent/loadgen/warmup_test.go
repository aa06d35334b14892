package loadgen

import (
	"context"
	"fmt"
	"slices"
	"testing"
)

// The warm-up must not send the pictures the first measured requests send:
// an engine's multimodal cache (kept by vLLM even without prefix caching)
// would answer those from cache and flatter the measurement.
func TestWarmupAvoidsTheMeasuredPictures(t *testing.T) {
	cases := []struct {
		name                           string
		set, cameras, requests, warmup int
		// overlapFree says whether the set is large enough for the warm-up
		// and the whole measurement to use different pictures.
		overlapFree bool
	}{
		{"disjoint", 16, 4, 8, 2, true},   // 8 warm-up + 8 measured pictures of 16
		{"exact fit", 16, 2, 12, 2, true}, // 4 warm-up + 12 measured
		{"wraps", 16, 4, 20, 1, false},    // the measurement cycles the whole set
		{"one whole cycle", 16, 2, 16, 3, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeEngine(t, func(s *sse, n int, req fakeRequest) {
				s.event(tokenChunk("a"))
				s.event("[DONE]")
			})
			w := oneCombo("480p", tc.cameras, tc.requests, tc.warmup)
			combos, err := Measure(context.Background(), f.target(), w, testImages{n: tc.set}, Hooks{})
			if err != nil {
				t.Fatal(err)
			}
			warm := combos[0].Warmup
			got := f.requests()
			if warm != tc.warmup*tc.cameras || len(got) != warm+tc.requests {
				t.Fatalf("warm-up %d, server saw %d requests; want %d + %d", warm, len(got), tc.warmup*tc.cameras, tc.requests)
			}
			// Warm-up requests all finish before the first measured one is
			// sent, so arrival order splits the phases.
			warmPics := map[string]bool{}
			for _, r := range got[:warm] {
				for _, u := range r.images() {
					warmPics[u] = true
				}
			}
			// The first wave of measured requests (one per camera) is what a
			// cache primed by the warm-up would flatter first.
			firstWave := min(tc.cameras, tc.requests)
			if !tc.overlapFree && warm+firstWave > tc.set {
				t.Fatalf("case %q cannot keep the first wave apart; choose sizes that can", tc.name)
			}
			var shared []string
			for i, r := range got[warm:] {
				for _, u := range r.images() {
					if warmPics[u] && (tc.overlapFree || i < firstWave) {
						shared = append(shared, fmt.Sprintf("measured request %d: %s", i, u))
					}
				}
			}
			if len(shared) > 0 {
				slices.Sort(shared)
				t.Errorf("the warm-up sent pictures the measurement sends again: %v", shared)
			}
		})
	}
}
