package loadgen

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// sustainedPlan is a sustained level of cameras cameras at 480p with
// requests requests and no warm-up: each camera's ramp is then its first
// request.
func sustainedPlan(cameras, requests int) protocol.PlannedCombo {
	return protocol.SustainedLevel(protocol.ComboKey{Size: "480p", Images: 1, Cameras: cameras}, requests)
}

// The window excludes the ramp: on an endpoint whose first request on a
// connection takes 400 ms more (a cold connection, a first prompt), a
// sustained level's mean is the steady state's 20 ms, and every camera
// sent at least three measured requests, all after the last ramp ended.
func TestSustainedWindowExcludesTheRamp(t *testing.T) {
	const steady, cold = 20 * time.Millisecond, 400 * time.Millisecond
	var mu sync.Mutex
	seen := map[string]bool{}
	f := newFakeEngine(t, func(s *sse, n int, req fakeRequest) {
		mu.Lock()
		first := !seen[s.r.RemoteAddr]
		seen[s.r.RemoteAddr] = true
		mu.Unlock()
		ttft := steady
		if first {
			ttft += cold
		}
		s.answer(ttft, 10, "a", " street")
	})
	const cameras = 4
	w := oneCombo("480p", cameras, 8, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var opened time.Time
	h := Hooks{ComboStart: func(idx, n int, pc protocol.PlannedCombo, warmup bool) {
		if !warmup {
			opened = time.Now()
		}
	}}
	c, err := MeasureCombo(ctx, f.target(), w, testImages{n: 4}, sustainedPlan(cameras, 8), h)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if !c.Sustained() || c.String() != "480p-1img-4cam-sustained" {
		t.Errorf("key %s, want the level marked sustained", c.ComboKey)
	}
	if opened.IsZero() {
		t.Error("ComboStart never said that the measured window opened")
	}
	within(t, "mean TTFT (ms)", ms(c.TTFT.Mean), ms(steady.Seconds()), ms(steady.Seconds())+tolMS)
	if c.TTFT.Max >= cold.Seconds() {
		t.Errorf("a measured request took %.3f s: a ramp's cold start was measured", c.TTFT.Max)
	}
	perCamera := map[int]int{}
	for _, r := range c.Requests {
		perCamera[r.Camera]++
	}
	for cam := range cameras {
		if perCamera[cam] < protocol.MinSustainedRounds {
			t.Errorf("camera %d sent %d measured requests, want at least %d", cam, perCamera[cam], protocol.MinSustainedRounds)
		}
	}
	if c.Rounds < protocol.MinSustainedRounds || c.Completed < cameras*protocol.MinSustainedRounds {
		t.Errorf("rounds %d, completed %d: want at least %d rounds of %d cameras", c.Rounds, c.Completed, protocol.MinSustainedRounds, cameras)
	}
	if c.WindowSec <= 0 || c.WallSec < c.WindowSec {
		t.Errorf("window %.3f s, wall %.3f s: want a window inside the measured time", c.WindowSec, c.WallSec)
	}
	// The server saw every camera's ramp, the measured requests and one
	// last request per camera after the window.
	if got := len(f.requests()); got < c.Completed+2*cameras {
		t.Errorf("server saw %d requests, want at least %d measured + %d ramps + %d last", got, c.Completed, cameras, cameras)
	}
	if c.Warmup < cameras {
		t.Errorf("warm-up %d, want at least the %d ramps counted as discarded", c.Warmup, cameras)
	}
}
