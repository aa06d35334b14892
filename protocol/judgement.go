package protocol

import (
	"fmt"
	"math"
	"strings"
)

// Statistics a camera level can be judged by.
const (
	// StatisticMean is the published method's: the mean TTFT of the
	// requests that completed, a failed request left out.
	StatisticMean = "mean"
	// StatisticP90 and StatisticP95 judge the slow answers: the TTFT that
	// 90 (95) of every 100 answers due started within, a failed request
	// (and under pacing a dropped frame) counted as an answer that never
	// started.
	StatisticP90 = "p90"
	StatisticP95 = "p95"
)

// DefaultTargetSec is the response-time target a level is judged against
// when none is given: the explorer's default.
const DefaultTargetSec = 3

// MaxTargetSec bounds a target: beyond an hour it is a typo.
const MaxTargetSec = 3600

// Judgement is how a camera level is judged to keep up: its judged TTFT,
// rounded to the 0.01 s the explorer shows, at most TargetSec. The zero
// Judgement is the published one (the mean, 3 s).
type Judgement struct {
	// Statistic is StatisticMean, StatisticP90 or StatisticP95; empty
	// is the mean.
	Statistic string `json:"statistic,omitempty"`
	// TargetSec is the response-time target in seconds; 0 is
	// DefaultTargetSec.
	TargetSec float64 `json:"target_sec,omitempty"`
}

// Stat is the judgement's statistic, the mean when unset.
func (j Judgement) Stat() string {
	if j.Statistic == "" {
		return StatisticMean
	}
	return j.Statistic
}

// Target is the judgement's target in seconds, the default when unset.
func (j Judgement) Target() float64 {
	if j.TargetSec == 0 {
		return DefaultTargetSec
	}
	return j.TargetSec
}

// ParseStatistic checks a statistic's name (case-insensitive).
func ParseStatistic(s string) (string, error) {
	switch v := strings.ToLower(strings.TrimSpace(s)); v {
	case StatisticMean, StatisticP90, StatisticP95:
		return v, nil
	}
	return "", fmt.Errorf("statistic %.40q: want mean, p90 or p95", s)
}

// Validate reports a field that is wrong and what is allowed; field is
// the judgement's path ("workload.judgement").
func (j Judgement) Validate(field string) error {
	if j.Statistic != "" {
		if _, err := ParseStatistic(j.Statistic); err != nil || j.Statistic != strings.ToLower(j.Statistic) {
			return fmt.Errorf("%s.statistic: %.40q, want mean, p90 or p95", field, j.Statistic)
		}
	}
	if t := j.TargetSec; math.IsNaN(t) || math.IsInf(t, 0) || t < 0 || t > MaxTargetSec {
		return fmt.Errorf("%s.target_sec: %g, want a positive number of seconds up to %d", field, t, MaxTargetSec)
	}
	return nil
}

// RoundSeconds rounds a response time to the 0.01 s it is shown with, so
// that "3 s" on screen never fails a 3 s target.
func RoundSeconds(s float64) float64 { return math.Round(s*100) / 100 }

// LevelFigures is what judging one measured camera level reads: a
// combination's (Combination.Figures) or the explorer's point of it.
type LevelFigures struct {
	Completed, Failed int
	// MeanTTFT is the mean TTFT of the completed requests, seconds.
	MeanTTFT float64
	// Tail is the TTFT over every answer due; nil when it is not known (a
	// published row imported with its means only).
	Tail *TTFTTail
	// Paced says that cameras sent on a frame clock; Dropped is the frames
	// they skipped.
	Paced   bool
	Dropped int
}

// Passes reports whether a level keeps up under the judgement:
//   - by the mean (published): at least one request completed and the mean
//     TTFT of those that did meets the target, a failed request left out;
//   - by p90/p95: the percentile over every answer due, a failed request
//     counted as one that never started, meets the target;
//   - paced, by either: no frame dropped and no request failed besides.
func (j Judgement) Passes(f LevelFigures) bool {
	if f.Paced && (f.Dropped > 0 || f.Failed > 0) {
		return false
	}
	sec, ok := j.Judged(f)
	return ok && RoundSeconds(sec) <= j.Target()
}

// Judged is the level's TTFT under the judgement's statistic; false when
// there is none to judge by: no request completed, the percentile falls on
// an answer that never started, or the tail is not known.
func (j Judgement) Judged(f LevelFigures) (float64, bool) {
	switch j.Stat() {
	case StatisticP90:
		return f.Tail.At(90)
	case StatisticP95:
		return f.Tail.At(95)
	}
	return f.MeanTTFT, f.Completed > 0
}

// Describe says what a passing level met, for help text, pages and
// summaries: "mean response time within 3 s, failed requests left out".
func (j Judgement) Describe() string {
	t := fmt.Sprintf("%g s", j.Target())
	switch j.Stat() {
	case StatisticP90:
		return "9 of 10 answers starting within " + t + ", a failed request or dropped frame counted as never started"
	case StatisticP95:
		return "19 of 20 answers starting within " + t + ", a failed request or dropped frame counted as never started"
	}
	return "mean response time within " + t + " over the requests that completed, failed requests left out"
}

// TTFTTail is what judging by a percentile needs: the TTFT percentiles
// over every answer that was due (each request sent, and under pacing
// each frame dropped), a failed request or dropped frame ranked as an
// answer that never started, slower than any that did.
type TTFTTail struct {
	// Due is the answers counted; Unstarted those that never started
	// (failed requests and dropped frames).
	Due       int `json:"due"`
	Unstarted int `json:"unstarted"`
	// P90 and P95 are nearest-rank percentiles in seconds, 0 when the rank
	// falls on an answer that never started (see At).
	P90 float64 `json:"p90"`
	P95 float64 `json:"p95"`
}

// At is the p-th percentile (90 or 95) and whether it is an answer that
// started; a nil tail has none.
func (t *TTFTTail) At(p int) (float64, bool) {
	if t == nil || t.Due < 1 {
		return 0, false
	}
	if NearestRank(p, t.Due) > t.Due-t.Unstarted {
		return 0, false
	}
	switch p {
	case 90:
		return t.P90, true
	case 95:
		return t.P95, true
	}
	return 0, false
}

// NearestRank is the 1-based rank of the p-th percentile of n values: the
// smallest value with at least p percent of the values at or below it.
func NearestRank(p, n int) int {
	return max(1, (p*n+99)/100)
}

// NewTTFTTail ranks the completed requests' TTFTs (seconds, sorted
// ascending) and unstarted answers that never started.
func NewTTFTTail(sortedTTFT []float64, unstarted int) *TTFTTail {
	t := &TTFTTail{Due: len(sortedTTFT) + unstarted, Unstarted: unstarted}
	at := func(p int) float64 {
		if k := NearestRank(p, t.Due); k <= len(sortedTTFT) {
			return sortedTTFT[k-1]
		}
		return 0
	}
	if t.Due > 0 {
		t.P90, t.P95 = at(90), at(95)
	}
	return t
}

// Figures is what judging the combination reads.
func (c *Combination) Figures() LevelFigures {
	f := LevelFigures{Completed: c.Completed, Failed: c.Failed, MeanTTFT: c.TTFT.Mean, Tail: c.Tail}
	if c.Pacing != nil {
		f.Paced, f.Dropped = true, c.Pacing.FramesDropped
	}
	return f
}
