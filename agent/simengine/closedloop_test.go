package simengine

import (
	"net/http/httptest"
	"os"
	"sync"
	"sync/atomic"
	"testing"
)

// closedLoop drives the real server over loopback the way the method does
// (one warm-up per camera, then the cameras share the measured requests,
// each sending its next as soon as its answer ended) and returns the mean
// TTFT in simulated seconds, read from llama.cpp's timings: the server's own
// clock, so a loaded test machine delays delivery but not the figures.
func closedLoop(t *testing.T, url, img string, cams, requests int) float64 {
	t.Helper()
	var left atomic.Int64
	left.Store(int64(requests))
	var mu sync.Mutex
	var sum float64
	var n int
	var wg sync.WaitGroup
	for range cams {
		wg.Go(func() {
			runLlama(t, url, 128, img) // warm-up, discarded
			for left.Add(-1) >= 0 {
				ms := runLlama(t, url, 128, img)["prompt_ms"]
				mu.Lock()
				sum += ms / 1000
				n++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return sum / float64(n)
}

// TestServerMaxCameras reads Max Cameras at the 3 s target off the real
// HTTP server for two Jetson profiles and checks the seed's figure.
func TestServerMaxCameras(t *testing.T) {
	// The calibration itself is checked in virtual time (TestCalibration).
	// Over HTTP a slow client stretches the gaps between its requests by
	// the speedup, so on a loaded machine or under -race the cameras stop
	// competing: a timed test, run on demand.
	if os.Getenv("VLMFLEET_SIM_HTTP_SWEEP") == "" {
		t.Skip("set VLMFLEET_SIM_HTTP_SWEEP=1 to sweep the real server over loopback")
	}
	img := jpegURL(t, 1280, 720)
	for _, p := range []Profile{
		mustLookup(t, "Jetson AGX Orin", "Qwen3-VL-4B-Instruct", "Q8_0", "llama.cpp"),
		mustLookup(t, "Jetson Orin NX", "Cosmos-Reason2-2B", "Q8_0", "llama.cpp"),
	} {
		ts := httptest.NewServer(New(p, Options{Speedup: 50, Seed: 7}).Handler())
		// Levels beyond the first failing one cannot change the reading.
		got := map[int]float64{}
		maxCam := 0
		for _, c := range p.Levels() {
			got[c] = closedLoop(t, ts.URL, img, c, p.RequestsPerLevel())
			if got[c] > 3 {
				break
			}
			maxCam = c
		}
		ts.Close()
		t.Logf("%s: TTFT by cameras %v (model alone: %v)", p.Key(), got, func() map[int]float64 {
			m := map[int]float64{}
			for c := range got {
				m[c] = levelTTFT(p, p.Contention, c)
			}
			return m
		}())
		if maxCam != p.Targets[0].Max {
			t.Errorf("%s: Max Cameras at 3 s over HTTP = %d, seed %d", p.Key(), maxCam, p.Targets[0].Max)
		}
	}
}
