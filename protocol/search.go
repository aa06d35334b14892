package protocol

import "slices"

// SearchLevel reports whether a search of the workload may measure k: a
// level of one of its ladders (one image per request at a size of Sizes,
// back to back under the search's load, or at one of its frame intervals)
// up to the ceiling. Which
// levels a search measures is known only as it runs; a reader of live
// progress checks against this instead of the plan.
func (w Workload) SearchLevel(k ComboKey) bool {
	if w.Search <= 0 || k.Images != 1 || k.Cameras < 1 || k.Cameras > w.Search || !slices.Contains(w.Sizes, k.Size) {
		return false
	}
	if k.FrameIntervalSec == 0 {
		return k.Sustained() == (w.SearchLoad() == LoadSustained)
	}
	return k.Load == "" && slices.Contains(w.FrameIntervalSec, k.FrameIntervalSec)
}
