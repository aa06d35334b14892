package simengine

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/agent/loadgen"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// A sustained level measured through the server, sped up as the demo
// runs it and with a loaded host's delays between client and server,
// reads the steady state of the model's queue: the mean that cameras which
// keep sending meet in virtual time (Simulate with Sustained). The server
// holds its clock while a camera of the open loop owes it a request, so
// the host's delays are not multiplied by the speed-up.
func TestSustainedLevelReadsTheQueuesSteadyState(t *testing.T) {
	p := mustLookup(t, "RTX PRO 6000", "Qwen3-VL-4B-Instruct", "BF16", "vLLM")
	// The model's jitter is the server's by seed: the virtual run draws
	// the same requests' work.
	const cams, seed = 8, 7
	speedup := demoSpeedup(p)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- New(p, Options{Speedup: speedup, Seed: seed}).Serve(ctx, ln) }()
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
	pc := protocol.SustainedLevel(protocol.ComboKey{Size: "720p", Images: 1, Cameras: cams}, p.RequestsPerLevel())
	c, err := loadgen.MeasureCombo(ctx, target, w, onePicture{url: jpegURL(t, 1280, 720)}, pc, loadgen.Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Failed > 0 {
		t.Fatalf("%d requests failed: %v", c.Failed, c.Errors)
	}
	c.ScaleTime(speedup)
	steady, err := Simulate(p, p.Contention, Sweep{Size: "720p", Images: 1, Cameras: cams, Requests: p.RequestsPerLevel(),
		Warmup: w.WarmupRequests, Sustained: true}, seed)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d cameras: measured sustained %.3f s, virtual sustained %.3f s, one round %.3f s",
		cams, c.TTFT.Mean, steady.TTFT, levelTTFT(p, p.Contention, cams))
	if d := c.TTFT.Mean/steady.TTFT - 1; d < -0.03 || d > 0.03 {
		t.Errorf("measured %.3f s sustained, the queue's steady state is %.3f s (%+.0f%%)", c.TTFT.Mean, steady.TTFT, 100*d)
	}
}
