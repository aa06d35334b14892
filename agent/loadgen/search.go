package loadgen

import (
	"slices"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// levelSearch chooses the camera levels that find the exact Max Cameras of
// one ladder (a size, back to back or at one frame interval), from the
// levels measured there so far. With lo the highest level that passed and
// hi the lowest level above it that failed: no lo, no search (nothing
// passes, so there is no count to refine); no hi, lo is doubled, up to the
// ceiling; else the gap between lo and hi is halved until they are
// adjacent.
//
// The answer is bracketed on measurements under the search's own load
// (verified): a ladder measured otherwise (back to back in one burst,
// while the search is sustained) only hints where to look. A lo known
// from the ladder alone is measured again before the search goes above
// it, and a hi known from the ladder alone once lo is verified just below
// it; a level that fails there moves the search down. A level already
// measured under the search's load is never chosen again: any level
// between lo and hi would have moved one of them.
type levelSearch struct {
	ceiling  int
	passed   map[int]bool
	verified map[int]bool
}

func newLevelSearch(ceiling int) *levelSearch {
	return &levelSearch{ceiling: ceiling, passed: map[int]bool{}, verified: map[int]bool{}}
}

// record notes a measured level and whether it kept up; verified says it
// was measured under the search's load, whose verdict no other replaces.
func (s *levelSearch) record(cameras int, pass, verified bool) {
	if s.verified[cameras] && !verified {
		return
	}
	s.passed[cameras] = pass
	s.verified[cameras] = verified
}

// bounds is lo, the highest level that passed (0: none did), and hi, the
// lowest that failed above it (0: none was measured).
func (s *levelSearch) bounds() (lo, hi int) {
	for c, ok := range s.passed {
		if ok && c > lo {
			lo = c
		}
	}
	for c, ok := range s.passed {
		if !ok && c > lo && (hi == 0 || c < hi) {
			hi = c
		}
	}
	return lo, hi
}

// next is the level to measure next; false when the search is over: lo
// and hi adjacent, the ceiling passed, or nothing passed at all, each
// bound measured under the search's load.
func (s *levelSearch) next() (int, bool) {
	lo, hi := s.bounds()
	switch {
	case lo == 0:
		return 0, false
	case !s.verified[lo]:
		return lo, true
	case hi == 0 && lo < s.ceiling:
		return min(2*lo, s.ceiling), true
	case hi-lo > 1:
		return lo + (hi-lo)/2, true
	case hi != 0 && !s.verified[hi]:
		return hi, true
	}
	return 0, false
}

// ladder names the camera levels one search refines: a size of
// Workload.Sizes with one image per request, on one frame clock (0: back
// to back).
type ladder struct {
	size     string
	interval float64
}

// schedule is the order Measure runs combinations in: the workload's
// plan, with each ladder's search, when the workload asks for one, right
// after the ladder's last level and before the next ladder. Searching at
// once, while the ladder's levels are the last thing the engine served,
// keeps a probe's conditions those of the levels it is judged beside.
type schedule struct {
	w    protocol.Workload
	plan []protocol.PlannedCombo
	// at is the next combination of plan.
	at int
	// searches holds each ladder's levels measured so far; searching is
	// the ladder being searched, nil between searches.
	searches  map[ladder]*levelSearch
	searching *ladder
	probes    int
}

func newSchedule(w protocol.Workload) *schedule {
	return &schedule{w: w, plan: w.Plan(), searches: map[ladder]*levelSearch{}}
}

// next is the combination to measure next; false when all are measured.
func (s *schedule) next() (protocol.PlannedCombo, bool) {
	if l := s.searching; l != nil {
		if cams, ok := s.searches[*l].next(); ok {
			s.probes++
			return s.probe(*l, cams), true
		}
		s.searching = nil
	}
	if s.at == len(s.plan) {
		return protocol.PlannedCombo{}, false
	}
	s.at++
	return s.plan[s.at-1], true
}

// probe is the search's level of cams cameras on ladder l: sustained back
// to back unless the workload asks for bursts; paced levels keep their
// frame clock.
func (s *schedule) probe(l ladder, cams int) protocol.PlannedCombo {
	k := protocol.ComboKey{Size: l.size, Images: 1, Cameras: cams, FrameIntervalSec: l.interval}
	pc := protocol.PlannedCombo{ComboKey: k, Requests: s.w.LevelRequests(cams, l.interval)}
	if !k.Paced() && s.w.SearchLoad() == protocol.LoadSustained {
		pc = protocol.SustainedLevel(k, pc.Requests)
	}
	pc.Search = true
	return pc
}

// total is the combinations known so far: the plan's and the probes
// chosen until now. A search's own count is known only when it ends.
func (s *schedule) total() int { return len(s.plan) + s.probes }

// measured notes whether pc, just measured, kept up under the workload's
// judgement, and starts its ladder's search after the ladder's last level.
func (s *schedule) measured(pc protocol.PlannedCombo, pass bool) {
	l, ok := s.ladderOf(pc)
	if !ok || s.w.Search <= 0 {
		return
	}
	search := s.searches[l]
	if search == nil {
		search = newLevelSearch(s.w.Search)
		s.searches[l] = search
	}
	search.record(pc.Cameras, pass, pc.Paced() || pc.Sustained() == (s.w.SearchLoad() == protocol.LoadSustained))
	if pc.Search {
		return
	}
	if upcoming, ok := s.upcomingLadder(); !ok || upcoming != l {
		s.searching = &l
	}
}

// upcomingLadder is the ladder of the plan's next combination, if it has
// one.
func (s *schedule) upcomingLadder() (ladder, bool) {
	if s.at == len(s.plan) {
		return ladder{}, false
	}
	return s.ladderOf(s.plan[s.at])
}

// ladderOf is the ladder a combination is a level of. The one-camera
// multi-image family is none, though its one-image combination of a size
// of Sizes is the ladder's when 1 is among the ladder's levels (the plan
// measures it once).
func (s *schedule) ladderOf(pc protocol.PlannedCombo) (ladder, bool) {
	if pc.Images != 1 || !slices.Contains(s.w.Sizes, pc.Size) {
		return ladder{}, false
	}
	if !pc.Search && !slices.Contains(s.w.Cameras, pc.Cameras) {
		return ladder{}, false
	}
	return ladder{size: pc.Size, interval: pc.FrameIntervalSec}, true
}
