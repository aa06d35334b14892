package loadgen

import (
	"context"
	"math/bits"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// upTo passes every level up to m: an engine whose response time grows
// with the cameras.
func upTo(m int) func(int) bool { return func(c int) bool { return c <= m } }

// The probes after a ladder of 1, 2, 4, 8 and 16 cameras, for where the
// real limit lies: doubling while the top passes, then halving the gap
// between the highest pass and the lowest failure above it.
func TestLevelSearchProbes(t *testing.T) {
	ladder := []int{1, 2, 4, 8, 16}
	for _, tc := range []struct {
		name    string
		ceiling int
		pass    func(int) bool
		probes  []int
		lo, hi  int
	}{
		{"the ladder tops out: double, then bisect", 64, upTo(23), []int{32, 24, 20, 22, 23}, 23, 24},
		{"the top passes and the next fails", 64, upTo(16), []int{32, 24, 20, 18, 17}, 16, 17},
		{"the ceiling passes: 64+", 64, upTo(100), []int{32, 64}, 64, 0},
		{"a ceiling that is no doubling", 40, upTo(100), []int{32, 40}, 40, 0},
		{"the ceiling is the top level", 16, upTo(100), nil, 16, 0},
		{"a failure between two ladder levels", 64, upTo(5), []int{6, 5}, 5, 6},
		{"the level just under the failure", 64, upTo(7), []int{6, 7}, 7, 8},
		{"adjacent ladder levels need nothing", 64, upTo(1), nil, 1, 2},
		{"nothing passes: no search", 64, upTo(0), nil, 0, 1},
		// Measurements are taken as they are: the highest pass counts
		// even above a failure, as Max Cameras reads them.
		{"a failure below a pass", 64, func(c int) bool { return c == 1 || c == 4 }, []int{6, 5}, 4, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newLevelSearch(tc.ceiling)
			for _, c := range ladder {
				s.record(c, tc.pass(c), true)
			}
			var probes []int
			for {
				c, ok := s.next()
				if !ok {
					break
				}
				if _, measured := s.passed[c]; measured {
					t.Fatalf("probe %d was measured already (probes so far %v)", c, probes)
				}
				probes = append(probes, c)
				s.record(c, tc.pass(c), true)
			}
			if !slices.Equal(probes, tc.probes) {
				t.Errorf("probes %v, want %v", probes, tc.probes)
			}
			if lo, hi := s.bounds(); lo != tc.lo || hi != tc.hi {
				t.Errorf("ends with pass %d, failure %d; want %d and %d", lo, hi, tc.lo, tc.hi)
			}
		})
	}
}

// No search takes more probes than doubling and halving need, wherever
// the limit lies: while no failure above the highest pass is known, one
// probe per doubling; then ceil(log2(gap)) to close the gap it left.
func TestLevelSearchProbeBound(t *testing.T) {
	const ceiling = 64
	for m := 1; m <= 80; m++ {
		s := newLevelSearch(ceiling)
		for _, c := range []int{1, 2, 4, 8, 16} {
			s.record(c, c <= m, true)
		}
		doubling, bisecting, gap := 0, 0, 0
		for c, ok := s.next(); ok; c, ok = s.next() {
			if _, hi := s.bounds(); hi == 0 {
				doubling++
			} else {
				if gap == 0 {
					lo, hi := s.bounds()
					gap = hi - lo
				}
				bisecting++
			}
			s.record(c, c <= m, true)
		}
		if doubling > 2 || bisecting > bits.Len(uint(max(gap, 1)-1)) {
			t.Errorf("limit %d: %d doubling and %d halving probes (gap %d), want at most 2 and ceil(log2(gap))", m, doubling, bisecting, gap)
		}
		lo, hi := s.bounds()
		if want := min(m, ceiling); lo != want || (m < ceiling && hi != m+1) {
			t.Errorf("limit %d: ends at %d..%d, want %d and %d", m, lo, hi, want, m+1)
		}
	}
}

// The schedule runs each ladder, back to back and at each frame interval,
// then its search, before the next ladder; the multi-image family last and
// never searched. A probe carries the level's request count and is marked.
func TestScheduleSearchesEachLadderAfterIt(t *testing.T) {
	w := protocol.DefaultWorkload()
	w.Sizes, w.Cameras, w.RequestsPerLevel = []string{"480p", "720p"}, []int{1, 2, 4}, 3
	w.FrameIntervalSec = []float64{5}
	w.MultiImageSizes, w.ImagesPerRequest = []string{"720p", "2K"}, []int{1, 3}
	w.Search = 16
	w.Load = protocol.LoadBurst // every level one round: the ladder verifies itself
	if err := w.Validate(); err != nil {
		t.Fatal(err)
	}
	// Back to back, 480p keeps up with 5 cameras and 720p with 2; every
	// paced ladder with 8.
	limit := map[ladder]int{{"480p", 0}: 5, {"720p", 0}: 2, {"480p", 5}: 8, {"720p", 5}: 8}
	s := newSchedule(w)
	var got []string
	for pc, ok := s.next(); ok; pc, ok = s.next() {
		name := pc.ComboKey.String()
		if pc.Search {
			name += "*"
			if want := w.LevelRequests(pc.Cameras, pc.FrameIntervalSec); pc.Requests != want {
				t.Errorf("%s: %d requests, want %d", name, pc.Requests, want)
			}
		}
		got = append(got, name)
		if n := s.total(); n < len(got) {
			t.Errorf("after %s: total %d, fewer than the %d handed out", name, n, len(got))
		}
		s.measured(pc, pc.Cameras <= limit[ladder{pc.Size, pc.FrameIntervalSec}])
	}
	want := []string{
		"480p-1img-1cam", "480p-1img-2cam", "480p-1img-4cam", "480p-1img-8cam*", "480p-1img-6cam*", "480p-1img-5cam*",
		"480p-1img-1cam-every5s", "480p-1img-2cam-every5s", "480p-1img-4cam-every5s",
		"480p-1img-8cam-every5s*", "480p-1img-16cam-every5s*", "480p-1img-12cam-every5s*", "480p-1img-10cam-every5s*", "480p-1img-9cam-every5s*",
		"720p-1img-1cam", "720p-1img-2cam", "720p-1img-4cam", "720p-1img-3cam*",
		"720p-1img-1cam-every5s", "720p-1img-2cam-every5s", "720p-1img-4cam-every5s",
		"720p-1img-8cam-every5s*", "720p-1img-16cam-every5s*", "720p-1img-12cam-every5s*", "720p-1img-10cam-every5s*", "720p-1img-9cam-every5s*",
		"720p-3img-1cam", "2K-1img-1cam", "2K-3img-1cam",
	}
	if !slices.Equal(got, want) {
		t.Errorf("order\n%v\nwant\n%v", got, want)
	}
	if s.total() != len(got) {
		t.Errorf("total %d at the end, want the %d measured", s.total(), len(got))
	}
}

// Where the ladder was measured in bursts and the search is sustained,
// the ladder's verdicts are hints: each bound the search ends on is
// measured sustained, and a ladder level that passed as a burst but
// fails sustained moves the search down.
func TestLevelSearchVerifiesTheLaddersHints(t *testing.T) {
	for _, tc := range []struct {
		name             string
		ladder           []int
		burst, sustained int // the highest level that keeps up
		probes           []int
		lo, hi           int
	}{
		{"the burst flatters: its top fails sustained", []int{1, 2, 4, 8, 16}, 11, 6, []int{8, 4, 6, 7}, 6, 7},
		{"the loads agree: both bounds measured again", []int{1, 2, 4, 8}, 5, 5, []int{4, 6, 5}, 5, 6},
		{"sustained keeps up with more", []int{1, 2, 4, 8}, 4, 9, []int{4, 6, 7, 8, 16, 12, 10, 9}, 9, 10},
		{"nothing keeps up sustained", []int{1, 2, 4}, 2, 0, []int{2, 1}, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newLevelSearch(64)
			for _, c := range tc.ladder {
				s.record(c, c <= tc.burst, false)
			}
			var probes []int
			for c, ok := s.next(); ok; c, ok = s.next() {
				if s.verified[c] {
					t.Fatalf("probe %d was measured sustained already (probes so far %v)", c, probes)
				}
				probes = append(probes, c)
				s.record(c, c <= tc.sustained, true)
			}
			if !slices.Equal(probes, tc.probes) {
				t.Errorf("probes %v, want %v", probes, tc.probes)
			}
			lo, hi := s.bounds()
			if lo != tc.lo || hi != tc.hi {
				t.Errorf("ends with pass %d, failure %d; want %d and %d", lo, hi, tc.lo, tc.hi)
			}
			for _, b := range []int{lo, hi} {
				if b > 0 && !s.verified[b] {
					t.Errorf("bound %d was not measured sustained", b)
				}
			}
		})
	}
}

// By default the ladder is one round, as published, and the search's
// back-to-back probes are sustained levels with at least three measured
// requests per camera; a paced ladder's probes keep their frame clock.
func TestScheduleProbesAreSustained(t *testing.T) {
	w := protocol.DefaultWorkload()
	w.Sizes, w.Cameras, w.RequestsPerLevel = []string{"480p"}, []int{1, 2, 4, 8, 16}, 8
	w.FrameIntervalSec = []float64{5}
	w.MultiImageSizes, w.ImagesPerRequest = nil, nil
	w.Search = 64
	if err := w.Validate(); err != nil {
		t.Fatal(err)
	}
	burst := map[float64]int{0: 11, 5: 8}
	s := newSchedule(w)
	var got []string
	for pc, ok := s.next(); ok; pc, ok = s.next() {
		name := pc.ComboKey.String()
		if pc.Search {
			name += "*"
		}
		got = append(got, name)
		if pc.Sustained() && pc.Requests != pc.Cameras*max(3, (8+pc.Cameras-1)/pc.Cameras) {
			t.Errorf("%s: %d requests planned, want at least 3 per camera and 8 in all", name, pc.Requests)
		}
		limit := burst[pc.FrameIntervalSec]
		if pc.Sustained() {
			limit = 6
		}
		s.measured(pc, pc.Cameras <= limit)
	}
	want := []string{
		"480p-1img-1cam", "480p-1img-2cam", "480p-1img-4cam", "480p-1img-8cam", "480p-1img-16cam",
		"480p-1img-8cam-sustained*", "480p-1img-4cam-sustained*", "480p-1img-6cam-sustained*", "480p-1img-7cam-sustained*",
		"480p-1img-1cam-every5s", "480p-1img-2cam-every5s", "480p-1img-4cam-every5s", "480p-1img-8cam-every5s", "480p-1img-16cam-every5s",
		"480p-1img-12cam-every5s*", "480p-1img-10cam-every5s*", "480p-1img-9cam-every5s*",
	}
	if !slices.Equal(got, want) {
		t.Errorf("order\n%v\nwant\n%v", got, want)
	}
}

// Without search the schedule is the plan.
func TestScheduleWithoutSearchIsThePlan(t *testing.T) {
	w := protocol.DefaultWorkload()
	s := newSchedule(w)
	var got []protocol.PlannedCombo
	for pc, ok := s.next(); ok; pc, ok = s.next() {
		got = append(got, pc)
		s.measured(pc, true)
	}
	if plan := w.Plan(); !slices.Equal(got, plan) {
		t.Errorf("schedule %v\nplan %v", got, plan)
	}
}

// crowdedEngine answers slower the more requests it holds: 5 ms per
// request in flight, and half a second more once they exceed knee. Each
// request first waits 30 ms so that a level's requests, sent together,
// have all arrived when it counts them.
func crowdedEngine(t *testing.T, knee int64) *fakeEngine {
	var inFlight atomic.Int64
	return newFakeEngine(t, func(s *sse, n int, req fakeRequest) {
		inFlight.Add(1)
		defer inFlight.Add(-1)
		const gather = 30 * time.Millisecond
		s.sleep(gather)
		in := inFlight.Load()
		ttft := time.Duration(in) * 5 * time.Millisecond
		if in > knee {
			ttft += 500 * time.Millisecond
		}
		s.answer(ttft, 10, "a", " street")
	})
}

// Measure runs a ladder's search right after it, through the same hooks as
// the ladder's levels: ComboDone sees every probe, marked as found by
// search, and ComboStart's count of combinations grows with the probes.
func TestMeasureSearchesAfterTheLadder(t *testing.T) {
	f := crowdedEngine(t, 5)
	w := oneCombo("480p", 1, 1, 0)
	w.Cameras = []int{1, 2, 4, 8}
	w.Search = 8
	w.Load = protocol.LoadBurst // one request per camera: the probes as the ladder
	w.Judgement = protocol.Judgement{TargetSec: 0.3}
	type start struct{ idx, n int }
	var starts []start
	var done []string
	h := Hooks{
		ComboStart: func(idx, n int, pc protocol.PlannedCombo, warmup bool) { starts = append(starts, start{idx, n}) },
		ComboDone: func(idx int, c *protocol.Combination) error {
			name := c.ComboKey.String()
			if c.Search {
				name += "*"
			}
			done = append(done, name)
			return nil
		},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	combos, err := Measure(ctx, f.target(), w, testImages{n: 4}, h)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"480p-1img-1cam", "480p-1img-2cam", "480p-1img-4cam", "480p-1img-8cam", "480p-1img-6cam*", "480p-1img-5cam*"}
	if !slices.Equal(done, want) {
		t.Errorf("measured %v, want %v", done, want)
	}
	wantStarts := []start{{0, 4}, {1, 4}, {2, 4}, {3, 4}, {4, 5}, {5, 6}}
	if !slices.Equal(starts, wantStarts) {
		t.Errorf("ComboStart (idx, n) %v, want %v", starts, wantStarts)
	}
	for _, c := range combos {
		if err := c.Validate(); err != nil {
			t.Errorf("%s: %v", c.ComboKey, err)
		}
		if c.Search != (c.Cameras == 5 || c.Cameras == 6) || c.Completed != c.Cameras {
			t.Errorf("%s: search %v, completed %d", c.ComboKey, c.Search, c.Completed)
		}
	}
}
