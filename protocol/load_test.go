package protocol

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

// load: sustained marks the back-to-back ladder levels, with at least
// three measured requests per camera; paced levels and the one-camera
// multi-image family keep theirs. Unset, the ladder is as published.
func TestPlanUnderSustainedLoad(t *testing.T) {
	w := DefaultWorkload()
	w.Sizes, w.Cameras, w.FrameIntervalSec = []string{"720p"}, []int{1, 4, 16}, []float64{5}
	w.MultiImageSizes, w.ImagesPerRequest = []string{"720p"}, []int{1, 3}
	published := w.Plan()
	w.Load = LoadSustained
	if err := w.Validate(); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, pc := range w.Plan() {
		got = append(got, pc.ComboKey.String()+":"+strconv.Itoa(pc.Requests))
	}
	want := "720p-1img-1cam-sustained:8 720p-1img-4cam-sustained:12 720p-1img-16cam-sustained:48 " +
		"720p-1img-1cam-every5s:8 720p-1img-4cam-every5s:16 720p-1img-16cam-every5s:64 720p-3img-1cam:5"
	if strings.Join(got, " ") != want {
		t.Errorf("plan\n%s\nwant\n%s", strings.Join(got, " "), want)
	}
	for _, pc := range published {
		if pc.Sustained() {
			t.Errorf("%s: sustained without load: sustained", pc.ComboKey)
		}
	}
	w.Load = "steady"
	if err := w.Validate(); err == nil || !strings.Contains(err.Error(), "workload.load") || !strings.Contains(err.Error(), "sustained") {
		t.Errorf("load steady: %v, want an error naming workload.load and what is allowed", err)
	}
}

// A level recorded before loads were is a burst, and a burst writes no
// load; a sustained level carries its rounds and window, and nothing
// else may.
func TestCombinationLoadRecord(t *testing.T) {
	var old Combination
	if err := json.Unmarshal([]byte(`{"size":"720p","images":1,"cameras":8,"completed":1,"ttft":{"n":1,"mean":1}}`), &old); err != nil {
		t.Fatal(err)
	}
	if old.Sustained() || old.LoadName() != "one round, as published" {
		t.Errorf("an old record reads as %q", old.LoadName())
	}
	if b, _ := json.Marshal(old); strings.Contains(string(b), "load") || strings.Contains(string(b), "rounds") {
		t.Errorf("a burst level writes %s", b)
	}
	c := old
	c.Load, c.Rounds, c.WindowSec = LoadSustained, 3, 1.5
	if err := c.Validate(); err != nil {
		t.Errorf("a sustained level: %v", err)
	}
	for name, bad := range map[string]func(*Combination){
		"rounds on a burst":    func(c *Combination) { c.Load = "" },
		"an unknown load":      func(c *Combination) { c.Load = "steady" },
		"sustained on a clock": func(c *Combination) { c.FrameIntervalSec = 5 },
		"a negative window":    func(c *Combination) { c.WindowSec = -1 },
	} {
		b := c
		bad(&b)
		if err := b.Validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
