package protocol

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestDefaultProfileWorkloadValidatesAndPlansTheAutoLadder(t *testing.T) {
	w := DefaultProfileWorkload()
	if err := w.Validate(); err != nil {
		t.Fatalf("the default profile workload is invalid: %v", err)
	}
	plan := w.Plan()
	// 1 pair × 1 size × the levels 1..256 doubling: 9.
	if len(plan) != 9 || w.PlannedCombinations() != 9 {
		t.Fatalf("planned %d levels, counted %d; want 9", len(plan), w.PlannedCombinations())
	}
	first := ComboKey{Size: "1120x1120", Images: 1, Cameras: 1, ISL: 1000, OSL: 1000}
	if plan[0].ComboKey != first || plan[0].Requests != 10 {
		t.Errorf("first level %+v, want %+v with 10 requests", plan[0], first)
	}
	if last := plan[8]; last.Cameras != 256 || last.Requests != 512 {
		t.Errorf("last level %+v, want 256 clients and 512 requests (2 × concurrency)", last)
	}
	if got := first.String(); got != "1120x1120-1img-1cam-isl1000-osl1000" {
		t.Errorf("key %q", got)
	}
	// An engine is sized for the highest level and the most images.
	if w.MaxCameras() != 256 || w.MaxImages() != 1 {
		t.Errorf("max cameras %d, images %d; want 256 and 1", w.MaxCameras(), w.MaxImages())
	}
	w.Profile.AutoCeiling, w.Profile.Concurrency, w.Profile.ImagesPerRequest = 0, []int{8, 2}, 3
	if w.MaxCameras() != 8 || w.MaxImages() != 3 {
		t.Errorf("listed: max cameras %d, images %d; want 8 and 3", w.MaxCameras(), w.MaxImages())
	}
}

func TestProfileLevelsAndRequests(t *testing.T) {
	for _, tc := range []struct {
		p    ProfileWorkload
		want []int
	}{
		{ProfileWorkload{AutoCeiling: 1}, []int{1}},
		{ProfileWorkload{AutoCeiling: 3}, []int{1, 2, 3}},
		{ProfileWorkload{AutoCeiling: 100}, []int{1, 2, 4, 8, 16, 32, 64, 100}},
		{ProfileWorkload{AutoCeiling: 64}, []int{1, 2, 4, 8, 16, 32, 64}},
		{ProfileWorkload{Concurrency: []int{8, 1, 2}}, []int{1, 2, 8}},
	} {
		if got := tc.p.Levels(); !reflect.DeepEqual(got, tc.want) || tc.p.levelCount() != len(tc.want) {
			t.Errorf("%+v: levels %v (counted %d), want %v", tc.p, got, tc.p.levelCount(), tc.want)
		}
	}
	var d ProfileWorkload
	if d.LevelRequests(1) != 10 || d.LevelRequests(8) != 16 {
		t.Errorf("default requests: %d at 1, %d at 8; want max(10, 2 × concurrency)", d.LevelRequests(1), d.LevelRequests(8))
	}
	set := ProfileWorkload{RequestsPerLevel: 5}
	if set.LevelRequests(1) != 5 || set.LevelRequests(8) != 8 {
		t.Errorf("set requests: %d at 1, %d at 8; want 5 and one a client", set.LevelRequests(1), set.LevelRequests(8))
	}
}

func TestProfileWorkloadValidateNamesTheField(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*Workload)
		want   string
	}{
		{"no pairs", func(w *Workload) { w.Profile.Lengths = nil }, "workload.profile.lengths: at least one (isl, osl) pair"},
		{"osl 0", func(w *Workload) { w.Profile.Lengths = []LengthPair{{1000, 1000}, {20000, 0}} },
			"workload.profile.lengths[1].osl: 0, want 1..10000000"},
		{"isl negative", func(w *Workload) { w.Profile.Lengths[0].ISL = -1 }, "workload.profile.lengths[0].isl: -1, want 0 (the prompt as written) up to 10000000"},
		{"isl too long", func(w *Workload) { w.Profile.Lengths[0].ISL = MaxProfileTokens + 1 }, "workload.profile.lengths[0].isl: 10000001"},
		{"pair twice", func(w *Workload) { w.Profile.Lengths = []LengthPair{{1000, 200}, {1000, 200}} },
			"workload.profile.lengths[1]: ISL 1000 / OSL 200 is listed twice (lengths[0] too)"},
		{"too many pairs", func(w *Workload) { w.Profile.Lengths = make([]LengthPair, MaxProfileLengths+1) },
			"workload.profile.lengths: 65 length pairs, at most 64"},
		{"no size", func(w *Workload) { w.Profile.Resolutions = nil }, "workload.profile.resolutions: at least one image size (WxH)"},
		{"size too wide", func(w *Workload) { w.Profile.Resolutions = []Resolution{{8193, 10}} },
			"workload.profile.resolutions[0]: 8193x10: each side must be 1..8192 pixels"},
		{"size twice", func(w *Workload) { w.Profile.Resolutions = []Resolution{{1120, 1120}, {1120, 1120}} },
			"workload.profile.resolutions[1]: 1120x1120 is listed twice"},
		{"sizes of no image", func(w *Workload) {
			w.Profile.ImagesPerRequest, w.Profile.Resolutions = 0, []Resolution{{8, 8}, {16, 16}}
		}, "workload.profile.resolutions: 2 image sizes, but images_per_request is 0 (text only): keep one"},
		{"format", func(w *Workload) { w.Profile.ImageFormat = "webp" }, `workload.profile.image_format: "webp", want png or jpeg`},
		{"images", func(w *Workload) { w.Profile.ImagesPerRequest = 65 }, "workload.profile.images_per_request: 65, want 0 (text only) up to 64"},
		{"ceiling 0 with no levels", func(w *Workload) { w.Profile.AutoCeiling = 0 }, "workload.profile.auto_ceiling: 0, want 1..1024"},
		{"ceiling and levels", func(w *Workload) { w.Profile.Concurrency = []int{1, 2} }, "workload.profile.auto_ceiling: 256, but workload.profile.concurrency lists the levels"},
		{"level 0", func(w *Workload) { w.Profile.AutoCeiling, w.Profile.Concurrency = 0, []int{1, 0} }, "workload.profile.concurrency[1]: 0, want 1..1024"},
		{"level twice", func(w *Workload) { w.Profile.AutoCeiling, w.Profile.Concurrency = 0, []int{4, 4} },
			"workload.profile.concurrency[1]: level 4 is listed twice"},
		{"requests", func(w *Workload) { w.Profile.RequestsPerLevel = -1 }, "workload.profile.requests_per_level: -1, want 1..100000, or 0 for max(10, 2 × concurrency)"},
		{"warmup", func(w *Workload) { w.Profile.WarmupRequests = 101 }, "workload.profile.warmup_requests: 101, want 0..100"},
		{"extra body not an object", func(w *Workload) { w.Profile.ExtraBody = json.RawMessage(`[1]`) }, "workload.profile.extra_body: want a JSON object"},
		{"extra body owned", func(w *Workload) { w.Profile.ExtraBody = json.RawMessage(`{"tools": [], "max_tokens": 5}`) },
			`workload.profile.extra_body: sets "max_tokens", which vlmfleet sets itself`},
		{"extra body switch", func(w *Workload) { w.Profile.ExtraBody = json.RawMessage(`{"ignore_eos": false}`) }, `sets "ignore_eos"`},
		{"too many levels", func(w *Workload) {
			w.Profile.Lengths = make([]LengthPair, 64)
			w.Profile.Resolutions = make([]Resolution, 64)
		}, "workload.profile: 36864 levels (64 length pairs × 64 image sizes × 9 concurrency levels), at most 4096 per job"},
		{"camera sizes", func(w *Workload) { w.Sizes = []string{"720p"} },
			"workload.sizes: a profile workload (workload.profile) does not measure the camera ladders; leave sizes out (use the profile's image sizes)"},
		{"camera levels", func(w *Workload) { w.Cameras = []int{1} }, "workload.cameras: a profile workload"},
		{"max tokens", func(w *Workload) { w.MaxTokens = 128 }, "workload.max_tokens: a profile workload"},
		{"frame clock", func(w *Workload) { w.FrameIntervalSec = []float64{5} },
			"workload.frame_interval_sec: a profile workload (workload.profile) does not measure the camera ladders; leave frame_interval_sec out (a profile has none)"},
		{"search", func(w *Workload) { w.Search = 64 }, "workload.search: a profile workload"},
		{"load", func(w *Workload) { w.Load = LoadBurst }, "workload.load: a profile workload"},
		{"judgement", func(w *Workload) { w.Judgement.TargetSec = 2 }, "workload.judgement: a profile workload"},
		{"prompt", func(w *Workload) { w.Prompt = "" }, "workload.prompt: must not be empty"},
		{"timeout", func(w *Workload) { w.RequestTimeoutSec = -1 }, "workload.request_timeout_sec: -1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := DefaultProfileWorkload()
			tc.mutate(&w)
			err := w.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
}

func TestProfileWorkloadAcceptsTheSeedsShapes(t *testing.T) {
	w := DefaultProfileWorkload()
	w.Profile.Lengths = []LengthPair{{1000, 1000}, {20000, 2000}, {60000, 2000}, {0, 200}}
	w.Profile.Resolutions = []Resolution{{1120, 1120}, {1648, 2048}}
	w.Profile.ImageFormat = ImageFormatJPEG
	w.Profile.ImagesPerRequest = 2
	w.Profile.AutoCeiling, w.Profile.Concurrency = 0, []int{1, 2, 4}
	w.Profile.NoStream = true
	w.Profile.ExtraBody = json.RawMessage(`{"tools": [{"type": "function", "function": {"name": "evaluation_markdown_bbox"}}]}`)
	w.Profile.RequestsPerLevel = 100
	if err := w.Validate(); err != nil {
		t.Fatal(err)
	}
	if n := len(w.Plan()); n != 4*2*3 || w.PlannedCombinations() != n {
		t.Errorf("planned %d, counted %d; want 24", n, w.PlannedCombinations())
	}
	w.Profile.ExtraBody = json.RawMessage(`null`)
	if err := w.Validate(); err != nil {
		t.Errorf("extra_body null: %v", err)
	}
	// A workload decoded from JSON with a profile round-trips.
	data, _ := json.Marshal(w)
	var back Workload
	if err := json.Unmarshal(data, &back); err != nil || !reflect.DeepEqual(back, w) {
		t.Errorf("round trip: %v\n%+v\n%+v", err, back, w)
	}
}
