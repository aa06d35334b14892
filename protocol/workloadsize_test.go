package protocol

import (
	"encoding/json"
	"errors"
	"runtime"
	"strings"
	"testing"
)

// ladderWorkload is one camera level per number 1..cameras at each size,
// at intervals frame clocks (1 s, 2 s, ...), and no multi-image family.
func ladderWorkload(sizes []string, cameras, intervals int) Workload {
	w := DefaultWorkload()
	w.Sizes = sizes
	w.Cameras = make([]int, cameras)
	for i := range w.Cameras {
		w.Cameras[i] = i + 1
	}
	w.FrameIntervalSec = make([]float64, intervals)
	for i := range w.FrameIntervalSec {
		w.FrameIntervalSec[i] = float64(i + 1)
	}
	w.MultiImageSizes, w.ImagesPerRequest = []string{}, nil
	return w
}

// bytesAllocated is what f allocates, in bytes.
func bytesAllocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

func TestCheckSizeBoundaries(t *testing.T) {
	everySize := []string{"480p", "720p", "1080p", "2K"}
	overCap := ladderWorkload(everySize, MaxCameraLevel, 0)
	overCap.MultiImageSizes, overCap.ImagesPerRequest = []string{"480p"}, []int{2}
	for _, c := range []struct {
		name string
		w    Workload
		want string // "" is accepted
	}{
		{"16 intervals", ladderWorkload([]string{"720p"}, 2, MaxFrameIntervals), ""},
		{"17 intervals", ladderWorkload([]string{"720p"}, 2, MaxFrameIntervals+1), "workload.frame_interval_sec: 17 intervals, at most 16"},
		{"the cap", ladderWorkload(everySize, MaxCameraLevel, 0), ""},
		{"one over the cap", overCap,
			"workload: 4097 combinations (4 sizes × 1024 camera levels × (1 + 0 frame intervals) + 1 multi-image sizes × 1 image counts), at most 4096 per job"},
		{"over the cap by frame clocks", ladderWorkload(everySize, 64, 16), "workload: 4352 combinations"},
		{"five sizes", ladderWorkload([]string{"480p", "720p", "1080p", "2K", "2k"}, 1, 0), "workload.sizes: 5 sizes, at most 4"},
		{"1025 camera levels", ladderWorkload([]string{"720p"}, MaxCameraLevel+1, 0), "workload.cameras: 1025 camera levels, at most 1024"},
	} {
		err := c.w.Validate()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: refused: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.HasPrefix(err.Error(), c.want)):
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		case c.want == "" && len(c.w.Plan()) > MaxPlannedCombinations:
			t.Errorf("%s: accepted, and plans %d combinations", c.name, len(c.w.Plan()))
		}
	}
}

// The sweep of the review: one size, cameras 1..1024 and 2,000 frame
// intervals. Planned, it is two million combinations; refused, it costs
// next to nothing, as nothing of it is planned.
func TestAHugeWorkloadIsRefusedWithoutPlanning(t *testing.T) {
	w := ladderWorkload([]string{"720p"}, MaxCameraLevel, 2000)
	var err error
	if b := bytesAllocated(func() { err = w.Validate() }); b > 64<<10 {
		t.Errorf("refusing it allocated %d bytes", b)
	}
	if err == nil || err.Error() != "workload.frame_interval_sec: 2000 intervals, at most 16" {
		t.Errorf("refused with %v", err)
	}
}

// The count is the plan's length, without the plan, where the families
// share combinations or not, with frame clocks or without.
func TestPlannedCombinationsIsThePlansLength(t *testing.T) {
	paced := DefaultWorkload()
	paced.FrameIntervalSec = []float64{5, 0.5}
	noOneCamera := DefaultWorkload()
	noOneCamera.Cameras = []int{2, 4}
	multiOnly := DefaultWorkload()
	multiOnly.Sizes, multiOnly.Cameras = nil, nil
	for name, w := range map[string]Workload{
		"default": DefaultWorkload(), "paced": paced, "no one-camera level": noOneCamera, "multi-image only": multiOnly,
		"a ladder": ladderWorkload([]string{"480p", "2K"}, 7, 3),
	} {
		if err := w.Validate(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got, want := w.PlannedCombinations(), len(w.Plan()); got != want {
			t.Errorf("%s: counted %d, planned %d", name, got, want)
		}
	}
}

// A list that repeats an entry would plan its combinations once but count
// them twice: it is refused, as cameras and frame intervals are.
func TestWorkloadRefusesRepeatedSizesAndImageCounts(t *testing.T) {
	for _, c := range []struct {
		edit func(*Workload)
		want string
	}{
		{func(w *Workload) { w.Sizes = []string{"720p", "480p", "720P"} }, "workload.sizes[2]: 720P is listed twice (workload.sizes[0] too)"},
		{func(w *Workload) { w.MultiImageSizes = []string{"2K", "2k"} }, "workload.multi_image_sizes[1]: 2k is listed twice"},
		{func(w *Workload) { w.ImagesPerRequest = []int{1, 3, 1} }, "workload.images_per_request[2]: 1 images is listed twice"},
	} {
		w := DefaultWorkload()
		c.edit(&w)
		if err := w.Validate(); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%v, want %q", err, c.want)
		}
	}
}

// A job whose workload is past the limits is refused with the job, so
// that its agent can say why; one that does not say whose it is is not.
func TestDecodeJobRefusesAHugeWorkloadWithTheJob(t *testing.T) {
	job := Job{Schema: SchemaVersion, ID: "s1-j1", SweepID: "s1", AgentID: "a1", Deployment: "d1",
		Workload: ladderWorkload([]string{"720p"}, MaxCameraLevel, 2000)}
	data, err := json.Marshal(job)
	if err != nil {
		t.Fatal(err)
	}
	_, err = DecodeJob(data)
	var refused *RefusedJobError
	if !errors.As(err, &refused) || refused.Job.ID != "s1-j1" || refused.Job.AgentID != "a1" ||
		err.Error() != "job: workload.frame_interval_sec: 2000 intervals, at most 16" {
		t.Fatalf("DecodeJob: %v", err)
	}
	job.AgentID = "../a1"
	data, _ = json.Marshal(job)
	if _, err := DecodeJob(data); err == nil || errors.As(err, &refused) {
		t.Errorf("a job for no valid agent: %v, want an error without the job", err)
	}
}

// No workload a job may carry panics the check, and every one accepted
// plans at most MaxPlannedCombinations combinations, as many as counted.
func FuzzWorkloadLimits(f *testing.F) {
	seed := func(w Workload) {
		data, _ := json.Marshal(w)
		f.Add(data)
	}
	seed(DefaultWorkload())
	// Small seeds past each limit: the fuzzer minimizes every new input,
	// and a seed of the review's 15 KB sweep spends its time doing so.
	seed(ladderWorkload([]string{"720p"}, 4, MaxFrameIntervals+1))
	seed(ladderWorkload([]string{"480p", "720p", "1080p", "2K"}, 64, MaxFrameIntervals))
	seed(ladderWorkload([]string{"480p", "720p", "1080p", "2K"}, 256, 3)) // the cap exactly
	seed(ladderWorkload([]string{"720p", "1080p"}, 32, MaxFrameIntervals))
	f.Add([]byte(`{"sizes":["720p","720p"],"cameras":[1],"frame_interval_sec":[0,0,1e308],"multi_image_sizes":["720p"],"images_per_request":[1,1]}`))
	seed(DefaultProfileWorkload())
	f.Add([]byte(`{"prompt":"p","profile":{"lengths":[{"isl":1000,"osl":1000},{"isl":0,"osl":2}],"resolutions":[{"width":1120,"height":1120}],` +
		`"image_format":"jpeg","concurrency":[1,2,4],"extra_body":{"tools":[]},"requests_per_level":3}}`))
	f.Add([]byte(`{"prompt":"p","profile":{"lengths":[{"isl":1,"osl":1}],"resolutions":[{"width":1,"height":1}],"image_format":"png","auto_ceiling":9223372036854775807}}`))
	f.Fuzz(func(t *testing.T, workload []byte) {
		doc := `{"schema":1,"id":"j1","agent_id":"a1","deployment":"d1","workload":` + string(workload) + `}`
		job, err := DecodeJob([]byte(doc))
		var w Workload
		if json.Unmarshal(workload, &w) == nil && w.Validate() == nil {
			if err != nil {
				t.Fatalf("the workload validates, the job refused: %v", err)
			}
		}
		if err != nil {
			return
		}
		n := job.Workload.PlannedCombinations()
		if n > MaxPlannedCombinations {
			t.Fatalf("accepted a workload of %d combinations", n)
		}
		if planned := len(job.Workload.Plan()); planned != n {
			t.Fatalf("counted %d combinations, planned %d", n, planned)
		}
	})
}
