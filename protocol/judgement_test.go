package protocol

import (
	"fmt"
	"strings"
	"testing"
)

func TestJudgementPasses(t *testing.T) {
	tail := func(ttft []float64, unstarted int) *TTFTTail { return NewTTFTTail(ttft, unstarted) }
	ten := []float64{1, 1, 1, 1, 1, 1, 1, 1, 2.5, 4}
	cases := []struct {
		name string
		j    Judgement
		f    LevelFigures
		want bool
	}{
		{"mean, published", Judgement{}, LevelFigures{Completed: 8, MeanTTFT: 3.004}, true},
		{"mean over the target", Judgement{}, LevelFigures{Completed: 8, MeanTTFT: 3.006}, false},
		{"mean leaves failures out", Judgement{}, LevelFigures{Completed: 1, Failed: 7, MeanTTFT: 1}, true},
		{"mean, all failed", Judgement{}, LevelFigures{Failed: 8}, false},
		{"p90 on a started answer", Judgement{Statistic: StatisticP90}, LevelFigures{Completed: 10, Tail: tail(ten, 0)}, true},
		{"p95 falls on the slow one", Judgement{Statistic: StatisticP95}, LevelFigures{Completed: 10, Tail: tail(ten, 0)}, false},
		{"p90 counts a failure as never started", Judgement{Statistic: StatisticP90},
			LevelFigures{Completed: 9, Failed: 1, Tail: tail([]float64{1, 1, 1, 1, 1, 1, 1, 1, 1}, 1)}, true},
		{"p90 with two of ten never started", Judgement{Statistic: StatisticP90},
			LevelFigures{Completed: 8, Failed: 2, Tail: tail([]float64{1, 1, 1, 1, 1, 1, 1, 1}, 2)}, false},
		{"p90 without a tail", Judgement{Statistic: StatisticP90}, LevelFigures{Completed: 8, MeanTTFT: 1}, false},
		{"paced with a drop", Judgement{}, LevelFigures{Completed: 8, MeanTTFT: 1, Paced: true, Dropped: 1}, false},
		{"paced with a failure", Judgement{}, LevelFigures{Completed: 7, Failed: 1, MeanTTFT: 1, Paced: true}, false},
		{"paced, every frame answered", Judgement{TargetSec: 1}, LevelFigures{Completed: 8, MeanTTFT: 1, Paced: true}, true},
	}
	for _, c := range cases {
		if got := c.j.Passes(c.f); got != c.want {
			t.Errorf("%s: Passes = %t, want %t", c.name, got, c.want)
		}
	}
}

func TestTTFTTailRanks(t *testing.T) {
	tl := NewTTFTTail([]float64{0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.7, 1.8, 1.9}, 1)
	if p, ok := tl.At(90); !ok || p != 1.8 {
		t.Errorf("p90 of 20 = %g %t, want 1.8 (rank 18)", p, ok)
	}
	if p, ok := tl.At(95); !ok || p != 1.9 {
		t.Errorf("p95 of 20 = %g %t, want 1.9 (rank 19)", p, ok)
	}
	tl = NewTTFTTail([]float64{0.1}, 1)
	if _, ok := tl.At(90); ok {
		t.Error("p90 of one answer and one never started: want none")
	}
}

func TestWorkloadBuyerOptionsRefused(t *testing.T) {
	cases := []struct {
		edit func(*Workload)
		want string
	}{
		{func(w *Workload) { w.FrameIntervalSec = []float64{5, 0} }, "workload.frame_interval_sec[1]: 0"},
		{func(w *Workload) { w.FrameIntervalSec = []float64{-1} }, "workload.frame_interval_sec[0]: -1"},
		{func(w *Workload) { w.FrameIntervalSec = []float64{5, 5} }, "listed twice"},
		{func(w *Workload) { w.Search = 8 }, "workload.search: ceiling 8, want 16"},
		{func(w *Workload) { w.Search = 2000 }, "up to 1024"},
		{func(w *Workload) { w.Sizes = nil; w.Search = 64 }, "multi-image family"},
		{func(w *Workload) { w.Judgement.Statistic = "p99" }, "workload.judgement.statistic"},
		{func(w *Workload) { w.Judgement.TargetSec = -3 }, "workload.judgement.target_sec"},
	}
	for _, c := range cases {
		w := DefaultWorkload()
		c.edit(&w)
		err := w.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("want an error naming %q, got %v", c.want, err)
		}
	}
}

func TestPlanPacesEachSizeAfterItsLadder(t *testing.T) {
	w := DefaultWorkload()
	w.Sizes, w.Cameras, w.MultiImageSizes = []string{"720p"}, []int{1, 4}, nil
	w.FrameIntervalSec = []float64{5}
	var got []string
	for _, pc := range w.Plan() {
		got = append(got, fmt.Sprintf("%s/%d", pc, pc.Requests))
	}
	want := "720p-1img-1cam/8 720p-1img-4cam/8 720p-1img-1cam-every5s/8 720p-1img-4cam-every5s/16"
	if strings.Join(got, " ") != want {
		t.Errorf("plan %q, want %q", strings.Join(got, " "), want)
	}
}
