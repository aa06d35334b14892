package simengine

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/agent/loadgen"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// jitterProxy forwards loopback TCP connections to a server, holding every
// read for a random delay up to maxDelay before writing it on, in both
// directions and in order: the scheduling delays of a loaded host (a late
// goroutine, a late flush, a late read), put where they land in a real run,
// between the client's clock and the engine.
type jitterProxy struct {
	ln       net.Listener
	target   string
	maxDelay time.Duration
	wg       sync.WaitGroup
}

func startJitterProxy(t testing.TB, target string, maxDelay time.Duration) *jitterProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &jitterProxy{ln: ln, target: target, maxDelay: maxDelay}
	p.wg.Go(p.accept)
	t.Cleanup(func() {
		ln.Close()
		p.wg.Wait()
	})
	return p
}

func (p *jitterProxy) url() string { return "http://" + p.ln.Addr().String() + "/v1" }

func (p *jitterProxy) accept() {
	for n := uint64(0); ; n++ {
		down, err := p.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			down.Close()
			continue
		}
		p.wg.Go(func() { p.pipe(up, down, rand.New(rand.NewPCG(n, 1))) })
		p.wg.Go(func() { p.pipe(down, up, rand.New(rand.NewPCG(n, 2))) })
	}
}

// pipe copies src to dst read by read, each after its delay; it closes
// both ends when either side ends.
func (p *jitterProxy) pipe(dst, src net.Conn, rng *rand.Rand) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 64<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			time.Sleep(time.Duration(rng.Int64N(int64(p.maxDelay) + 1)))
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// onePicture is a picture set of one 720p JPEG: what the Max Cameras
// readings are measured with.
type onePicture struct{ url string }

func (o onePicture) Name() string { return "one" }
func (o onePicture) Hash() string { return "one" }
func (o onePicture) Len() int     { return 1 }
func (o onePicture) DataURL(string, int) (string, error) {
	return o.url, nil
}
func (o onePicture) UniquePicture(string, int, uint64) (string, string, error) {
	return "", "", errors.New("no unique pictures here")
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

// demoSpeedup is the speedup the demo runs a device at (harness/simlab's Demo).
func demoSpeedup(p Profile) float64 {
	if isJetson(p.Device) {
		return 40
	}
	return 10
}

// TestMaxCamerasUnderHostJitter measures the demo's profiles with the real
// load generator through a proxy that delays every read by up to 4 ms, the
// profiles all at once on a shared machine, and checks that each reads the
// seed's Max Cameras at the default 3 s target: the simulator's answer must
// not depend on how busy the host it runs on is. (A 4 ms delay is 160 ms of
// a Jetson simulated 40 times faster.)
func TestMaxCamerasUnderHostJitter(t *testing.T) {
	if testing.Short() {
		t.Skip("sweeps six profiles in real time")
	}
	pic := onePicture{url: jpegURL(t, 1280, 720)}
	for _, p := range demoProfiles(t) {
		t.Run(p.Key(), func(t *testing.T) {
			t.Parallel()
			want := -1
			for _, tg := range p.Targets {
				if tg.TargetS == 3 {
					want = tg.Max
				}
			}
			speedup := demoSpeedup(p)
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- New(p, Options{Speedup: speedup, Seed: 7}).Serve(ctx, ln) }()
			defer func() {
				cancel()
				if err := <-done; err != nil {
					t.Error(err)
				}
			}()
			proxy := startJitterProxy(t, ln.Addr().String(), 4*time.Millisecond)

			w := protocol.DefaultWorkload()
			w.RequestTimeoutSec /= speedup
			target := loadgen.Target{BaseURL: proxy.url(), Model: p.Model}
			ttft := map[int]float64{}
			var lv []string
			for _, c := range p.Levels() {
				pc := protocol.PlannedCombo{ComboKey: protocol.ComboKey{Size: "720p", Images: 1, Cameras: c}, Requests: max(p.RequestsPerLevel(), c)}
				combo, err := loadgen.MeasureCombo(ctx, target, w, pic, pc, loadgen.Hooks{})
				if err != nil {
					t.Fatal(err)
				}
				if combo.Failed > 0 {
					t.Fatalf("%d cameras: %d requests failed: %v", c, combo.Failed, combo.Errors)
				}
				combo.ScaleTime(speedup)
				ttft[c] = combo.TTFT.Mean
				lv = append(lv, fmt.Sprintf("%d:%.2f/%.2f", c, ttft[c], levelTTFT(p, p.Contention, c)))
				if ttft[c] > 3 {
					break // levels beyond the first failing one cannot change the reading
				}
			}
			t.Logf("mean TTFT by cameras, measured/virtual: %s", strings.Join(lv, " "))
			got := MaxCameras(p.Levels(), func(c int) float64 {
				if v, ok := ttft[c]; ok {
					return v
				}
				return 1e9
			}, 3)
			if got != want {
				t.Errorf("Max Cameras at 3 s = %d, the seed's is %d", got, want)
			}
		})
	}
}
