package simengine

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// httpSpeedup is the speedup the demo runs simulated devices at.
const httpSpeedup = 40

// streamTTFT sends one streamed request and returns the time from just
// before it was written to its first content token, the way the load
// generator times it, in simulated seconds.
func streamTTFT(t *testing.T, client *http.Client, url string, body []byte) float64 {
	t.Helper()
	start := time.Now()
	resp, err := client.Post(url+"/v1/chat/completions", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	ttft := -1.0
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || ttft >= 0 || data == "[DONE]" {
			continue
		}
		var c struct {
			Choices []struct {
				Delta struct {
					Content *string `json:"content"`
				} `json:"delta"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			t.Fatalf("chunk %q: %v", data, err)
		}
		if len(c.Choices) > 0 && c.Choices[0].Delta.Content != nil && *c.Choices[0].Delta.Content != "" {
			ttft = time.Since(start).Seconds() * httpSpeedup
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if ttft < 0 {
		t.Fatal("stream without a content token")
	}
	return ttft
}

// closedLoop drives the real server over loopback the way the load
// generator does: one warm-up request per camera, all at once, and once all
// have ended the cameras share the measured requests, each sending its next
// as soon as its answer ended. It returns the mean client-side TTFT in
// simulated seconds.
func closedLoop(t *testing.T, url string, body []byte, cams, requests int) float64 {
	t.Helper()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: cams}}
	defer client.CloseIdleConnections()
	var wg sync.WaitGroup
	for range cams {
		wg.Go(func() { streamTTFT(t, client, url, body) })
	}
	wg.Wait()
	var left atomic.Int64
	left.Store(int64(requests))
	var mu sync.Mutex
	var sum float64
	for range cams {
		wg.Go(func() {
			for left.Add(-1) >= 0 {
				v := streamTTFT(t, client, url, body)
				mu.Lock()
				sum += v
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return sum / float64(requests)
}

// demoProfiles are the configurations the demo serves.
func demoProfiles(t testing.TB) []Profile {
	return []Profile{
		mustLookup(t, "Jetson Orin NX", "Cosmos-Reason2-2B", "Q8_0", "llama.cpp"),
		mustLookup(t, "Jetson Orin NX", "Gemma-4-E2B-it", "Q4_0", "llama.cpp"),
		mustLookup(t, "Jetson AGX Orin", "Cosmos3-Edge", "BF16", "vLLM"),
		mustLookup(t, "Jetson AGX Orin", "Qwen3-VL-4B-Instruct", "Q8_0", "llama.cpp"),
		mustLookup(t, "RTX PRO 6000", "Qwen3-VL-4B-Instruct", "BF16", "vLLM"),
		mustLookup(t, "RTX PRO 6000", "Qwen3-VL-4B-Instruct", "Q8_0", "llama.cpp"),
	}
}

// TestServerMaxCameras sweeps the demo's profiles over real HTTP at the
// demo's speedup, timed by the client as the load generator times it, and
// checks the seed's Max Cameras readings (720p, one image).
func TestServerMaxCameras(t *testing.T) {
	// The calibration itself is checked in virtual time (TestCalibration).
	// Over HTTP every real millisecond the client and the server spend is
	// 40 simulated ones, so a loaded machine or -race shifts the figures:
	// a timed test, run on demand.
	if os.Getenv("VLMFLEET_SIM_HTTP_SWEEP") == "" {
		t.Skip("set VLMFLEET_SIM_HTTP_SWEEP=1 to sweep the real server over loopback")
	}
	body := chatBody("", true, defaultMaxTokens, jpegURL(t, 1280, 720))
	for _, p := range demoProfiles(t) {
		ts := httptest.NewServer(New(p, Options{Speedup: httpSpeedup, Seed: 7}).Handler())
		got := map[int]float64{}
		var lv []string
		var worst float64
		for _, tg := range p.Targets {
			worst = max(worst, tg.TargetS)
		}
		for _, c := range p.Levels() {
			got[c] = closedLoop(t, ts.URL, body, c, p.RequestsPerLevel())
			lv = append(lv, fmt.Sprintf("%d:%.2f/%.2f", c, got[c], levelTTFT(p, p.Contention, c)))
			// Levels beyond the first failing one cannot change a reading.
			if got[c] > worst {
				break
			}
		}
		ts.Close()
		t.Logf("%-52s TTFT by cameras, HTTP/virtual: %s", p.Key(), strings.Join(lv, " "))
		for _, tg := range p.Targets {
			maxCam := 0
			for _, c := range p.Levels() {
				v, ok := got[c]
				if !ok {
					break
				}
				if v <= tg.TargetS {
					maxCam = c
				}
			}
			if maxCam != tg.Max {
				t.Errorf("%s: Max Cameras at %g s over HTTP = %d, seed %d", p.Key(), tg.TargetS, maxCam, tg.Max)
			}
		}
	}
}
