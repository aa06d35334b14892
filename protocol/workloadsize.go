package protocol

import (
	"fmt"
	"math"
	"slices"
)

// Limits on how much a workload plans. The plan is made on the controller
// (live progress, the order of a run's combinations) and on the agent (the
// engine's slots, the measurement itself), so a workload is held to them
// from the lengths of its lists, before anything is planned.
const (
	// MaxFrameIntervals bounds workload.frame_interval_sec: each interval
	// measures every camera level of every size once more.
	MaxFrameIntervals = 16
	// MaxPlannedCombinations bounds the combinations one job plans. The
	// fullest sweep a lab runs measures every size (4) at every camera
	// level up to 32, back to back and at all 16 frame clocks, and one
	// camera at every image count up to 64: 4 × 32 × 17 + 4 × 64 = 2,432.
	// Each combination takes seconds to minutes (a warm-up and at least
	// requests_per_level answers), so that is days of measuring already;
	// 4,096 leaves room above it, and its plan is a few hundred KiB.
	MaxPlannedCombinations = 4096
)

// PlannedCombinations is how many combinations Plan lists, counted from
// the lengths of the workload's lists without making the plan: sizes ×
// camera levels × (1 + frame intervals), plus multi-image sizes × image
// counts, less the combinations of both families (a size of both, one
// image, one camera). It is exact for a workload whose lists repeat
// nothing, as Validate asks, and more than Plan lists otherwise, never
// fewer. A search's levels are chosen as it runs and are not counted.
// A profile workload plans its levels instead: length pairs × resolutions
// × concurrency levels (with the automatic rule, every level it may reach).
func (w Workload) PlannedCombinations() int {
	if w.Profile != nil {
		return w.Profile.plannedCombinations()
	}
	ladders := mulSat(len(w.Sizes), 1+len(w.FrameIntervalSec))
	n := addSat(mulSat(ladders, len(w.Cameras)), mulSat(len(w.MultiImageSizes), len(w.ImagesPerRequest)))
	if !slices.Contains(w.Cameras, 1) || !slices.Contains(w.ImagesPerRequest, 1) {
		return n
	}
	multi := make(map[string]bool, len(w.MultiImageSizes))
	for _, s := range w.MultiImageSizes {
		multi[s] = true
	}
	both := 0
	for _, s := range w.Sizes {
		if multi[s] {
			both++
			delete(multi, s) // a size repeated in Sizes is one combination
		}
	}
	return n - both
}

// CheckSize refuses a workload that plans more than a job may: a list
// longer than its limit, or more than MaxPlannedCombinations combinations.
// It reads only the lists' lengths (and, to count exactly, which sizes
// both families share), so it costs nothing whatever the workload asks;
// Validate calls it before anything else.
func (w Workload) CheckSize() error {
	sizes := len(ImageSizes())
	for _, l := range []struct {
		field, what string
		n, most     int
	}{
		{"workload.sizes", "sizes", len(w.Sizes), sizes},
		{"workload.cameras", "camera levels", len(w.Cameras), MaxCameraLevel},
		{"workload.frame_interval_sec", "intervals", len(w.FrameIntervalSec), MaxFrameIntervals},
		{"workload.multi_image_sizes", "sizes", len(w.MultiImageSizes), sizes},
		{"workload.images_per_request", "image counts", len(w.ImagesPerRequest), MaxImagesInRequest},
	} {
		if l.n > l.most {
			return fmt.Errorf("%s: %d %s, at most %d", l.field, l.n, l.what, l.most)
		}
	}
	if w.Profile != nil {
		return w.Profile.checkSize()
	}
	if n := w.PlannedCombinations(); n > MaxPlannedCombinations {
		return fmt.Errorf("workload: %d combinations (%d sizes × %d camera levels × (1 + %d frame intervals) + %d multi-image sizes × %d image counts), at most %d per job",
			n, len(w.Sizes), len(w.Cameras), len(w.FrameIntervalSec), len(w.MultiImageSizes), len(w.ImagesPerRequest), MaxPlannedCombinations)
	}
	return nil
}

// checkSize is CheckSize for a profile: its lists' lengths, and its
// levels, at most MaxPlannedCombinations.
func (p ProfileWorkload) checkSize() error {
	for _, l := range []struct {
		field, what string
		n, most     int
	}{
		{"workload.profile.lengths", "length pairs", len(p.Lengths), MaxProfileLengths},
		{"workload.profile.resolutions", "image sizes", len(p.Resolutions), MaxProfileResolutions},
		{"workload.profile.concurrency", "levels", len(p.Concurrency), MaxCameraLevel},
	} {
		if l.n > l.most {
			return fmt.Errorf("%s: %d %s, at most %d", l.field, l.n, l.what, l.most)
		}
	}
	if n := p.plannedCombinations(); n > MaxPlannedCombinations {
		return fmt.Errorf("workload.profile: %d levels (%d length pairs × %d image sizes × %d concurrency levels), at most %d per job",
			n, len(p.Lengths), len(p.Resolutions), p.levelCount(), MaxPlannedCombinations)
	}
	return nil
}

// mulSat and addSat are a product and a sum of counts (0 or more) that stop
// at math.MaxInt: the lengths of a workload not yet checked may be anything
// a message holds.
func mulSat(a, b int) int {
	if a != 0 && b > math.MaxInt/a {
		return math.MaxInt
	}
	return a * b
}

func addSat(a, b int) int {
	if b > math.MaxInt-a {
		return math.MaxInt
	}
	return a + b
}
