package loadgen

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// pacedCombo is the planned paced combination of w at cameras and interval.
func pacedCombo(w protocol.Workload, cameras int, interval float64) protocol.PlannedCombo {
	return protocol.PlannedCombo{
		ComboKey: protocol.ComboKey{Size: w.Sizes[0], Images: 1, Cameras: cameras, FrameIntervalSec: interval},
		Requests: w.LevelRequests(cameras, interval),
	}
}

// fixedAnswer is an engine that answers every request in the same time,
// however many it holds: its first token comes ttft after the request and
// ends the answer.
func fixedAnswer(t *testing.T, ttft time.Duration) *fakeEngine {
	return newFakeEngine(t, func(s *sse, n int, req fakeRequest) { s.answer(ttft, 10, "a") })
}

// A camera on a frame clock drops the frames that fall due while its
// previous answer runs, and only those: at an interval just under the
// answer time every other frame is dropped, at twice it none. The frames
// sent are answered as fast as one camera alone is.
func TestPacedDropsExactlyWhenTheIntervalIsShorterThanTheAnswer(t *testing.T) {
	const answer = 250 * time.Millisecond
	for _, tc := range []struct {
		name     string
		interval float64
		requests int // frames due, shared by the two cameras
		halfDrop bool
	}{
		{"0.8x the answer", 0.2, 16, true},
		{"2x the answer", 0.5, 8, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := fixedAnswer(t, answer)
			w := oneCombo("480p", 2, tc.requests, 0)
			w.FrameIntervalSec = []float64{tc.interval}
			c, err := MeasureCombo(context.Background(), f.target(), w, testImages{n: 16}, pacedCombo(w, 2, tc.interval), Hooks{})
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Validate(); err != nil {
				t.Fatalf("the combination is not valid: %v", err)
			}
			p := c.Pacing
			t.Logf("%s: due %d, sent %d, dropped %d; TTFT %.0f ms, age %.0f ms", c.ComboKey, p.FramesDue, p.FramesSent, p.FramesDropped, ms(c.TTFT.Mean), ms(p.Age.Mean))
			if p.FramesDue != tc.requests || c.Failed != 0 || c.Completed != p.FramesSent || len(f.requests()) != p.FramesSent {
				t.Errorf("due %d (want %d), sent %d, completed %d, failed %d, engine saw %d", p.FramesDue, tc.requests, p.FramesSent, c.Completed, c.Failed, len(f.requests()))
			}
			if tc.halfDrop {
				// A tick that fires late may find the answer over and send:
				// one such per camera is allowed; more than half is never
				// possible, as a drop leaves the camera free at the next tick.
				if p.FramesDropped > p.FramesDue/2 || p.FramesDropped < p.FramesDue/2-2 {
					t.Errorf("dropped %d of %d frames, want about half", p.FramesDropped, p.FramesDue)
				}
			} else if p.FramesDropped != 0 {
				t.Errorf("dropped %d frames at twice the answer time", p.FramesDropped)
			}
			// The age adds each tick's lateness to the answer's time: on a
			// loaded machine the two add up their delays.
			within(t, "TTFT mean (ms)", ms(c.TTFT.Mean), ms(answer.Seconds()), ms(answer.Seconds())+tolMS)
			within(t, "age mean (ms)", ms(p.Age.Mean), ms(answer.Seconds()), ms(answer.Seconds())+2*tolMS)
			if tl := c.Tail; tl == nil || tl.Due != p.FramesDue || tl.Unstarted != p.FramesDropped {
				t.Errorf("tail %+v, want %d due and the %d dropped unstarted", tl, p.FramesDue, p.FramesDropped)
			}
			if passes := (protocol.Judgement{TargetSec: 1}).Passes(c.Figures()); passes == tc.halfDrop {
				t.Errorf("passes a 1 s target: %t, with %d frames dropped", passes, p.FramesDropped)
			}
		})
	}
}

// Camera i ticks at i·T/k and every T after, each tick timed from the
// clock's start; each frame carries the picture of its tick, so a camera's
// pictures run as the frames fall due.
func TestPacedCamerasTickOnTheirPhase(t *testing.T) {
	// A frame is never sent before its tick; how late it is sent is the
	// machine's, so the typical (median) lateness is held to tolMS while a
	// loaded machine may wake one timer later. Cameras without phases, or
	// on the wrong ones, send every frame early or all of them late.
	const cameras, interval = 4, 0.6
	f := fixedAnswer(t, 10*time.Millisecond)
	w := oneCombo("480p", cameras, 16, 0)
	w.FrameIntervalSec = []float64{interval}
	c, err := MeasureCombo(context.Background(), f.target(), w, testImages{n: 16}, pacedCombo(w, cameras, interval), Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Pacing.FramesDue != 16 || c.Pacing.FramesDropped != 0 || len(c.Requests) != 16 {
		t.Fatalf("pacing %+v, %d records; want 16 frames sent", c.Pacing, len(c.Requests))
	}
	lateness := make([]float64, 0, len(c.Requests))
	for i, rec := range c.Requests {
		cam, tick := i%cameras, i/cameras
		due := (float64(tick) + float64(cam)/cameras) * interval
		if rec.Seq != i || rec.Camera != cam {
			t.Errorf("record %d is frame %d of camera %d, want frame %d of camera %d", i, rec.Seq, rec.Camera, i, cam)
		}
		if ms(rec.Start) < ms(due) {
			t.Errorf("frame %d sent at %.1f ms, before its tick at %.0f ms", i, ms(rec.Start), ms(due))
		}
		lateness = append(lateness, ms(rec.Start)-ms(due))
	}
	slices.Sort(lateness)
	if median := lateness[len(lateness)/2]; median > tolMS {
		t.Errorf("frames sent a median %.1f ms after their ticks (all: %.0f), want at most %d", median, lateness, tolMS)
	}
	for i, r := range f.requests() {
		if want := fmt.Sprintf("pic%d", i); !strings.HasSuffix(r.images()[0], want) {
			t.Errorf("request %d carried %s, want the picture of its frame, %s", i, r.images()[0], want)
		}
	}
	// The window runs from the first tick to the last answer.
	last := lateness[len(lateness)-1]
	within(t, "wall (ms)", ms(c.WallSec), ms(3.75*interval), ms(3.75*interval)+10+last+tolMS)
}

// The warm-up ticks on the same clock and is discarded; the measured clock
// starts only once every warm-up answer has ended, so no measured frame is
// dropped for a warm-up answer.
func TestPacedWarmupEndsBeforeTheMeasuredClock(t *testing.T) {
	const cameras = 2
	var mu sync.Mutex
	var warmEnded time.Time
	var measuredFirst time.Time
	f := newFakeEngine(t, func(s *sse, n int, req fakeRequest) {
		arrived := time.Now()
		if n < cameras {
			// The warm-up's answers are slower than the interval, whose
			// 400 ms leave a measured answer of 10 ms room on a loaded
			// machine.
			s.answer(800*time.Millisecond, 10, "a")
			mu.Lock()
			if now := time.Now(); now.After(warmEnded) {
				warmEnded = now
			}
			mu.Unlock()
			return
		}
		mu.Lock()
		if measuredFirst.IsZero() {
			measuredFirst = arrived
		}
		mu.Unlock()
		s.answer(10*time.Millisecond, 10, "a")
	})
	w := oneCombo("480p", cameras, 8, 1)
	w.FrameIntervalSec = []float64{0.4}
	var phases []bool
	c, err := MeasureCombo(context.Background(), f.target(), w, testImages{n: 16}, pacedCombo(w, cameras, 0.4),
		Hooks{ComboStart: func(_, _ int, _ protocol.PlannedCombo, warmup bool) { phases = append(phases, warmup) }})
	if err != nil {
		t.Fatal(err)
	}
	if c.Warmup != cameras || len(f.requests()) != cameras+c.Pacing.FramesSent {
		t.Errorf("warm-up %d, engine saw %d requests; want %d + %d", c.Warmup, len(f.requests()), cameras, c.Pacing.FramesSent)
	}
	if c.Pacing.FramesDropped != 0 || c.Pacing.FramesDue != 8 {
		t.Errorf("pacing %+v: a warm-up answer dropped a measured frame", c.Pacing)
	}
	if measuredFirst.Before(warmEnded) {
		t.Errorf("the first measured frame arrived %s before the warm-up's last answer ended", warmEnded.Sub(measuredFirst))
	}
	if len(phases) != 2 || !phases[0] || phases[1] {
		t.Errorf("ComboStart phases %v, want warm-up then measurement", phases)
	}
}

// A frame clock keeps in flight only the answers that overlap, not one per
// camera; Hooks.InFlight hears each request start and end, and progress
// counts towards the frames sent.
func TestPacedReportsRequestsInFlight(t *testing.T) {
	f := fixedAnswer(t, 150*time.Millisecond)
	w := oneCombo("480p", 4, 8, 0)
	w.FrameIntervalSec = []float64{0.2}
	var mu sync.Mutex
	var inFlight, most int
	var reports []Progress
	c, err := MeasureCombo(context.Background(), f.target(), w, testImages{n: 16}, pacedCombo(w, 4, 0.2), Hooks{
		InFlight: func(d int) {
			mu.Lock()
			inFlight += d
			most = max(most, inFlight)
			mu.Unlock()
		},
		Request: func(_ protocol.ComboKey, _ protocol.RequestRecord, p Progress) {
			mu.Lock()
			reports = append(reports, p)
			mu.Unlock()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	// Four cameras 50 ms apart, each answer 150 ms: three overlap, four
	// when an answer runs late.
	if inFlight != 0 || most < 3 || most > 4 || c.MaxInFlight < 3 || c.MaxInFlight > 4 {
		t.Errorf("in flight at the end %d, at most %d (max_in_flight %d); want 0 and 3", inFlight, most, c.MaxInFlight)
	}
	last := reports[len(reports)-1]
	if len(reports) != c.Pacing.FramesSent || last.Done != c.Completed || last.Total != c.Pacing.FramesSent {
		t.Errorf("%d progress reports, the last %+v; want %d, done and total %d", len(reports), last, c.Pacing.FramesSent, c.Completed)
	}
}

// A simulated engine running faster than its device gets frames as much
// more often; the key keeps the device's interval.
func TestPacedClockRunsAtTheEndpointsSpeed(t *testing.T) {
	f := fixedAnswer(t, 5*time.Millisecond)
	w := oneCombo("480p", 1, 4, 0)
	w.FrameIntervalSec = []float64{2}
	target := f.target()
	target.Speedup = 20
	c, err := MeasureCombo(context.Background(), target, w, testImages{n: 16}, pacedCombo(w, 1, 2), Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	if c.FrameIntervalSec != 2 || c.ComboKey.String() != "480p-1img-1cam-every2s" {
		t.Errorf("key %s, want the device's interval", c.ComboKey)
	}
	for i, rec := range c.Requests {
		within(t, fmt.Sprintf("frame %d sent (ms)", i), ms(rec.Start), ms(float64(i)*0.1), ms(float64(i)*0.1)+tolMS)
	}
}

// Against the simulator, which keeps the frame clock on its own, each
// frame says its tick, and a camera takes the tick the simulator names
// next (dropping those before it) rather than judge by its own clock; the
// answer's age is its lateness and its last token as the simulator says.
func TestPacedCameraFollowsTheSimulatorsClock(t *testing.T) {
	var mu sync.Mutex
	var fields []FrameField
	f := newFakeEngine(t, func(s *sse, n int, req fakeRequest) {
		ff, ok := ParseFrameField(s.r.Header.Get(FrameHeader))
		if !ok {
			http.Error(s.w, "no frame header", http.StatusBadRequest)
			return
		}
		mu.Lock()
		fields = append(fields, ff)
		mu.Unlock()
		s.event(tokenChunk("a"))
		s.event(fmt.Sprintf(`{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":1},"sim_timings":{"ttft_s":0.01,"last_token_s":0.02,"e2e_s":0.02,"late_s":0.005,"next_tick":%d}}`, ff.Tick+2))
		s.event("[DONE]")
	})
	w := oneCombo("480p", 1, 6, 0)
	target := f.target()
	target.Simulated = true
	pc := protocol.PlannedCombo{ComboKey: protocol.ComboKey{Size: "480p", Images: 1, Cameras: 1, FrameIntervalSec: 0.05}, Requests: 6}
	c, err := MeasureCombo(context.Background(), target, w, testImages{n: 16}, pc, Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	if p := c.Pacing; p.FramesDue != 6 || p.FramesSent != 3 || p.FramesDropped != 3 || math.Abs(p.Age.Mean-0.025) > 1e-9 {
		t.Errorf("pacing %+v; want 3 of 6 frames sent, each 0.025 s old when answered", p)
	}
	for i, ff := range fields {
		if want := (FrameField{ID: fields[0].ID, Camera: 0, Tick: 2 * i, Cameras: 1, Ticks: 6, Interval: 0.05}); ff != want {
			t.Errorf("frame %d said %+v, want %+v", i, ff, want)
		}
	}
	if len(fields) != 3 || c.TTFT.Mean != 0.01 {
		t.Errorf("%d frames sent, TTFT %g; want 3 and the simulator's 0.01 s", len(fields), c.TTFT.Mean)
	}
}
