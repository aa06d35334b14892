package loadgen

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// slowUniquePictures makes each unique picture in cost, as a busy device
// might, and notes how many requests the engine had received as each was
// made.
type slowUniquePictures struct {
	testImages
	cost   time.Duration
	engine *fakeEngine

	mu     sync.Mutex
	madeAt []int
}

func (p *slowUniquePictures) UniquePicture(size string, i int, seed uint64) (string, string, error) {
	received := len(p.engine.requests())
	p.mu.Lock()
	p.madeAt = append(p.madeAt, received)
	p.mu.Unlock()
	time.Sleep(p.cost) // the work of making the picture, not a wait for an event
	return p.testImages.UniquePicture(size, i, seed)
}

// A unique picture is made just before its request is sent, not all of a
// level's ahead, and outside the request's timed window: with pictures
// that take 250 ms each to make and an engine that answers in 10 ms, one
// camera's requests, as a round and sustained, measure the engine's 10 ms,
// and each picture after the level's first request is made once the
// engine has received the requests before it.
func TestUniquePicturesAreMadeAsEachRequestIsSent(t *testing.T) {
	const cost, ttft = 250 * time.Millisecond, 10 * time.Millisecond
	for _, pc := range []protocol.PlannedCombo{
		{ComboKey: protocol.ComboKey{Size: "480p", Images: 1, Cameras: 1}, Requests: 4},
		sustainedPlan(1, 4),
	} {
		t.Run(pc.String(), func(t *testing.T) {
			f := newFakeEngine(t, func(s *sse, _ int, _ fakeRequest) { s.answer(ttft, 10, "a", " street") })
			pics := &slowUniquePictures{testImages: testImages{n: 4}, cost: cost, engine: f}
			w := oneCombo("480p", 1, 4, 1)
			w.UniqueImages = protocol.Set(true)
			c, err := MeasureCombo(context.Background(), f.target(), w, pics, pc, Hooks{})
			if err != nil {
				t.Fatal(err)
			}
			if c.Failed > 0 || c.Completed < 4 {
				t.Fatalf("completed %d, failed %d: %v", c.Completed, c.Failed, c.Errors)
			}
			if c.TTFT.Max >= (cost / 2).Seconds() {
				t.Errorf("a measured TTFT of %.3f s: making a %v picture was timed", c.TTFT.Max, cost)
			}
			// Before the engine's first request: the level's preparation
			// (one picture per phase, to fail early) and the first
			// request's own. After it, at most one per request received.
			sent := len(f.requests())
			perReceived := make([]int, sent+1)
			pics.mu.Lock()
			defer pics.mu.Unlock()
			for _, n := range pics.madeAt {
				perReceived[n]++
			}
			if perReceived[0] > 3 {
				t.Errorf("%d pictures made before the engine received a request (of %d made for %d requests): made ahead", perReceived[0], len(pics.madeAt), sent)
			}
			for n, made := range perReceived[1:] {
				if made > 1 {
					t.Errorf("%d pictures made once the engine had received %d requests, want at most one", made, n+1)
				}
			}
			if len(pics.madeAt) < sent {
				t.Errorf("%d pictures made for %d requests", len(pics.madeAt), sent)
			}
		})
	}
}
