package simengine

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/agent/loadgen"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// serve runs a simulated engine of p on loopback until the test ends and
// returns its base URL.
func serve(t *testing.T, p Profile, opt Options) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- New(p, opt).Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return "http://" + ln.Addr().String() + "/v1"
}

// Cameras on a frame clock are answered by what the simulated device
// holds, not by how many cameras there are: four cameras whose frames
// never overlap are answered as fast as one camera alone (and faster than
// four back to back), and at an interval shorter than an answer a camera
// drops frames. Both follow from the simulated time alone: through a
// proxy that delays every read by up to 4 ms (160 ms of the device's time
// at 40 times its speed), the same frames are dropped.
func TestPacedLoadIsAnsweredByTheRequestsInFlight(t *testing.T) {
	const speedup = 40
	p := mustLookup(t, "Jetson AGX Orin", "Qwen3-VL-4B-Instruct", "Q8_0", "llama.cpp")
	url := serve(t, p, Options{Speedup: speedup, Seed: 3})
	direct := loadgen.Target{BaseURL: url, Model: p.Model, Speedup: speedup, Simulated: true}
	jittered := direct
	jittered.BaseURL = startJitterProxy(t, strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/v1"), 4*time.Millisecond).url()
	pic := onePicture{url: jpegURL(t, 1280, 720)}
	w := protocol.DefaultWorkload()
	w.Sizes, w.MaxTokens, w.RequestTimeoutSec = []string{"720p"}, 16, w.RequestTimeoutSec/speedup
	measure := func(target loadgen.Target, cameras int, interval float64) protocol.Combination {
		t.Helper()
		pc := protocol.PlannedCombo{ComboKey: protocol.ComboKey{Size: "720p", Images: 1, Cameras: cameras, FrameIntervalSec: interval},
			Requests: w.LevelRequests(cameras, interval)}
		c, err := loadgen.MeasureCombo(context.Background(), target, w, pic, pc, loadgen.Hooks{})
		if err != nil {
			t.Fatal(err)
		}
		if c.Failed > 0 {
			t.Fatalf("%s: %d requests failed: %v", pc.ComboKey, c.Failed, c.Errors)
		}
		c.ScaleTime(speedup)
		return c
	}
	alone, four := measure(direct, 1, 0), measure(direct, 4, 0)
	// Four cameras a quarter of the interval apart, each answer well
	// within that quarter: one frame in flight at a time.
	interval := 6 * alone.E2E.Mean
	for name, target := range map[string]loadgen.Target{"direct": direct, "jittered": jittered} {
		spread := measure(target, 4, interval)
		t.Logf("%s: TTFT one camera %.2f s, four back to back %.2f s, four every %.1f s %.2f s", name,
			alone.TTFT.Mean, four.TTFT.Mean, interval, spread.TTFT.Mean)
		if spread.Pacing.FramesDropped != 0 {
			t.Errorf("%s: %d frames dropped at an interval of six answers", name, spread.Pacing.FramesDropped)
		}
		if got := spread.TTFT.Mean; got < 0.98*alone.TTFT.Mean || got > 1.02*alone.TTFT.Mean {
			t.Errorf("%s: four cameras every %.1f s: TTFT %.2f s, one camera alone %.2f s", name, interval, got, alone.TTFT.Mean)
		}
	}
	if four.TTFT.Mean < 1.5*alone.TTFT.Mean {
		t.Errorf("four cameras back to back %.2f s, barely slower than one (%.2f s): the comparison says nothing", four.TTFT.Mean, alone.TTFT.Mean)
	}
	// Two cameras, each ticking twice per answer: every other frame of
	// each falls due while its answer runs, and more as the two answers
	// slow each other.
	fast, fastJittered := measure(direct, 2, alone.E2E.Mean/2), measure(jittered, 2, alone.E2E.Mean/2)
	t.Logf("two cameras every %.2f s: %d of %d frames dropped (%d through the proxy)", fast.FrameIntervalSec,
		fast.Pacing.FramesDropped, fast.Pacing.FramesDue, fastJittered.Pacing.FramesDropped)
	if fast.Pacing.FramesDropped < fast.Pacing.FramesDue/2 {
		t.Errorf("%d of %d frames dropped at half the answer time", fast.Pacing.FramesDropped, fast.Pacing.FramesDue)
	}
	if fastJittered.Pacing.FramesDropped != fast.Pacing.FramesDropped {
		t.Errorf("the host's delays changed the frames dropped: %d, %d without them", fastJittered.Pacing.FramesDropped, fast.Pacing.FramesDropped)
	}
}
