package protocol

import (
	"fmt"
	"slices"
)

// The load a back-to-back camera level is measured under.
//
// A burst is the published method: every camera waits for the slowest
// warm-up, then the cameras send together and share the level's requests,
// one round when there are as many cameras as requests. On an engine that
// takes prompts one after another, camera i of the round waits for i
// others, so the round's mean is about half the wait that cameras which
// keep sending see.
//
// Sustained, each camera sends its next request as soon as its previous
// answer ends, with no barrier after its warm-up. The measured window
// opens once every camera has finished its ramp (its warm-up and one
// further request, so that the cameras have drifted apart as a
// deployment's do) and closes once every camera has sent at least
// SustainedRounds measured requests; every camera then sends one more,
// unmeasured, so that the last measured answers still run beside the
// others. The figures are those of the requests sent inside the window.
const (
	LoadBurst     = "burst"
	LoadSustained = "sustained"
)

// MinSustainedRounds is the fewest measured requests every camera of a
// sustained level sends.
const MinSustainedRounds = 3

// ParseLoad reads a workload's load: "" (the ladder as published, the
// search sustained), LoadBurst or LoadSustained.
func ParseLoad(s string) (string, error) {
	switch s {
	case "", LoadBurst, LoadSustained:
		return s, nil
	}
	return "", fmt.Errorf("%q, want %s or %s", s, LoadBurst, LoadSustained)
}

func (w Workload) validateLoad() error {
	if _, err := ParseLoad(w.Load); err != nil {
		return fmt.Errorf("workload.load: %w", err)
	}
	return nil
}

// LadderLoad is the load of the workload's back-to-back ladder levels:
// a burst, as published, unless the workload asks for sustained load.
func (w Workload) LadderLoad() string {
	if w.Load == LoadSustained {
		return LoadSustained
	}
	return LoadBurst
}

// SearchLoad is the load a search's back-to-back probes are measured
// under, and the one its answer is bracketed on: sustained, the load
// cameras that run all day see, unless the workload asks for bursts.
func (w Workload) SearchLoad() string {
	if w.Load == LoadBurst {
		return LoadBurst
	}
	return LoadSustained
}

// SustainedRounds is the measured requests every camera of a sustained
// level sends at least: MinSustainedRounds, or more when the level's
// request count asks for more per camera.
func SustainedRounds(cameras, requests int) int {
	return max(MinSustainedRounds, (requests+cameras-1)/max(cameras, 1))
}

// SustainedLevel is a back-to-back level of cameras under sustained load
// planned with requests: its key marked and its request count the
// measured requests it expects.
func SustainedLevel(k ComboKey, requests int) PlannedCombo {
	k.Load = LoadSustained
	return PlannedCombo{ComboKey: k, Requests: k.Cameras * SustainedRounds(k.Cameras, requests)}
}

// sustainLadders marks the back-to-back ladder levels of a plan
// sustained when the workload asks for sustained load.
func (w Workload) sustainLadders(plan []PlannedCombo) []PlannedCombo {
	if w.LadderLoad() != LoadSustained {
		return plan
	}
	for i, pc := range plan {
		if !pc.Paced() && pc.Images == 1 && slices.Contains(w.Sizes, pc.Size) && slices.Contains(w.Cameras, pc.Cameras) {
			s := SustainedLevel(pc.ComboKey, pc.Requests)
			s.Search = pc.Search
			plan[i] = s
		}
	}
	return plan
}

// Sustained says that the level's cameras kept sending.
func (k ComboKey) Sustained() bool { return k.Load == LoadSustained }

// LoadName names the load a level was measured under, as people read it
// beside its figures: "sustained", "one round, as published" for a
// back-to-back burst, and "" for a level on a frame clock.
func (k ComboKey) LoadName() string {
	switch {
	case k.Paced():
		return ""
	case k.Sustained():
		return "sustained"
	}
	return "one round, as published"
}

// validateKeyLoad checks a key's load: sustained only back to back.
func (k ComboKey) validateKeyLoad() error {
	switch {
	case k.Load != "" && k.Load != LoadSustained:
		return fmt.Errorf("load: %q, want %s or none (a burst)", k.Load, LoadSustained)
	case k.Load != "" && k.Paced():
		return fmt.Errorf("load: %s, but cameras on a frame clock keep their clock", k.Load)
	}
	return nil
}

// validateSustained checks what a sustained level recorded of its window.
func (c *Combination) validateSustained() error {
	if err := c.validateKeyLoad(); err != nil {
		return err
	}
	if !c.Sustained() {
		if c.Rounds != 0 || c.WindowSec != 0 {
			return fmt.Errorf("rounds %d, window_sec %g: recorded only by a sustained level", c.Rounds, c.WindowSec)
		}
		return nil
	}
	if err := checkCount("rounds", c.Rounds, MaxRequestsInCombination); err != nil {
		return err
	}
	return checkFigure("window_sec", c.WindowSec)
}
