package protocol

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// ImageSize is one of the four frame sizes of the published method
// (explorer/testdata/seed.txt).
type ImageSize struct {
	Name   string `json:"name"`
	Width  int    `json:"width"`
	Height int    `json:"height"`
}

// ImageSizes returns the sizes of the method, smallest first.
func ImageSizes() []ImageSize {
	return []ImageSize{
		{Name: "480p", Width: 854, Height: 480},
		{Name: "720p", Width: 1280, Height: 720},
		{Name: "1080p", Width: 1920, Height: 1080},
		{Name: "2K", Width: 2560, Height: 1440},
	}
}

// LookupImageSize finds a size by name (case-insensitive: "2k" is "2K").
func LookupImageSize(name string) (ImageSize, error) {
	var names []string
	for _, s := range ImageSizes() {
		if strings.EqualFold(s.Name, name) {
			return s, nil
		}
		names = append(names, s.Name)
	}
	return ImageSize{}, fmt.Errorf("image size %q: want one of %s", name, strings.Join(names, ", "))
}

// SizeRank orders size names smallest first; unknown names sort last.
func SizeRank(name string) int {
	for i, s := range ImageSizes() {
		if strings.EqualFold(s.Name, name) {
			return i
		}
	}
	return len(ImageSizes())
}

// DefaultPrompt is the prompt of the method.
const DefaultPrompt = "Describe the scene."

// Workload is what a run measures. Two families of combinations are
// measured, as in the method: every camera level at each of Sizes with one
// image per request, and one camera at each of MultiImageSizes with each of
// ImagesPerRequest images. A combination in both families is measured once,
// with the larger request count.
type Workload struct {
	Prompt    string `json:"prompt"`
	MaxTokens int    `json:"max_tokens"`

	Sizes   []string `json:"sizes"`
	Cameras []int    `json:"cameras"`
	// RequestsPerLevel is the measured requests at each camera level; a
	// level with more cameras than this gets one request per camera.
	RequestsPerLevel int `json:"requests_per_level"`

	// The multi-image family is always written out, so that an empty list
	// means "none" rather than "the default".
	MultiImageSizes    []string `json:"multi_image_sizes"`
	ImagesPerRequest   []int    `json:"images_per_request"`
	MultiImageRequests int      `json:"multi_image_requests"`

	// WarmupRequests is the number of requests each camera sends before every
	// combination; their figures are discarded.
	WarmupRequests int `json:"warmup_requests"`

	// UniqueImages perturbs pixels per request so that no engine cache can
	// recognise a frame it has seen: a real camera never sends the same
	// frame twice. Unset, the engine decides (EffectiveUniqueImages): an
	// engine with no per-request cache switch gets perturbed pictures. A
	// run's header records the choice made.
	UniqueImages *bool `json:"unique_images,omitempty"`
	// RequestTimeoutSec bounds one request; 0 means no bound. It is always
	// written: a decoder that fills defaults first (the controller's) would
	// take a missing 0 for the default bound.
	RequestTimeoutSec float64 `json:"request_timeout_sec"`
	// CachePrompt, when set, is sent as llama.cpp's cache_prompt.
	CachePrompt *bool `json:"cache_prompt,omitempty"`
	// ImageSet names the pictures: "builtin" or a directory on the agent
	// (resolved against its configured image roots).
	ImageSet string `json:"image_set,omitempty"`

	// FrameIntervalSec lists frame clocks measured besides back to back:
	// at each interval T, every camera level of Sizes is measured again
	// with each camera taking a frame every T seconds (Pacing). Empty:
	// back to back only, as published.
	FrameIntervalSec []float64 `json:"frame_interval_sec,omitempty"`
	// Search, above 0, is the ceiling of the search for the exact Max
	// Cameras after each ladder of Sizes (back to back and at each frame
	// interval): levels are doubled from the highest passing one until one
	// fails or the ceiling is reached, then bisected until the passing and
	// the failing level are adjacent. 0: the ladder only.
	Search int `json:"search,omitempty"`
	// Judgement is how a level is judged to keep up: by search, and by
	// bench's summary. The explorer lets its user judge again.
	Judgement Judgement `json:"judgement,omitzero"`
	// Load is how back-to-back levels are measured (load.go): empty, the
	// ladder as published and the search sustained; LoadBurst or
	// LoadSustained, every level so.
	Load string `json:"load,omitempty"`
	// Profile, when set, makes the run a latency and throughput profile
	// (profileworkload.go) instead of the camera ladders.
	Profile *ProfileWorkload `json:"profile,omitempty"`
}

// DefaultSearchCeiling is the search's ceiling when none is named.
const DefaultSearchCeiling = 64

// DefaultWorkload is the published method (explorer/testdata/seed.txt) as measured on a Jetson.
func DefaultWorkload() Workload {
	f := false
	return Workload{
		Prompt:             DefaultPrompt,
		MaxTokens:          128,
		Sizes:              []string{"480p", "720p", "1080p"},
		Cameras:            []int{1, 2, 4, 8, 16},
		RequestsPerLevel:   8,
		MultiImageSizes:    []string{"480p", "720p", "1080p", "2K"},
		ImagesPerRequest:   []int{1, 3, 5},
		MultiImageRequests: 5,
		WarmupRequests:     1,
		RequestTimeoutSec:  300,
		CachePrompt:        &f,
		ImageSet:           "builtin",
	}
}

// ComboKey identifies one measured combination.
type ComboKey struct {
	Size    string `json:"size"`
	Images  int    `json:"images"`
	Cameras int    `json:"cameras"`
	// FrameIntervalSec is the frame clock the cameras sent on, seconds; 0
	// is back to back, as published.
	FrameIntervalSec float64 `json:"frame_interval_sec,omitempty"`
	// Load is how a back-to-back level's cameras sent (load.go): empty
	// for one synchronized round, as published; LoadSustained for
	// cameras that keep sending.
	Load string `json:"load,omitempty"`
	// ISL and OSL are a profile level's lengths (ProfileWorkload); 0 on
	// the camera ladders. A profile level's Size is its "WxH" and its
	// Cameras its concurrency.
	ISL int `json:"isl,omitempty"`
	OSL int `json:"osl,omitempty"`
}

// String is the key's stable form, also used in message ids and store keys:
// "720p-1img-4cam", "720p-1img-4cam-every5s" on a frame clock and
// "720p-1img-4cam-sustained" under sustained load.
func (k ComboKey) String() string {
	s := fmt.Sprintf("%s-%dimg-%dcam", k.Size, k.Images, k.Cameras)
	if k.FrameIntervalSec > 0 {
		s += "-every" + strconv.FormatFloat(k.FrameIntervalSec, 'g', -1, 64) + "s"
	}
	if k.Load != "" {
		s += "-" + k.Load
	}
	if k.OSL > 0 {
		s += fmt.Sprintf("-isl%d-osl%d", k.ISL, k.OSL)
	}
	return s
}

// Paced says that the cameras sent on a frame clock.
func (k ComboKey) Paced() bool { return k.FrameIntervalSec > 0 }

// PlannedCombo is one combination of a plan with its request count: the
// measured requests of a back-to-back level, the frames due of a paced one.
type PlannedCombo struct {
	ComboKey
	Requests int `json:"requests"`
	// Search says that a search for the exact Max Cameras chose the level.
	Search bool `json:"search,omitempty"`
}

// Plan lists the combinations of the workload's ladders, in the order they
// run: the multi-camera family size by size, each size's levels back to
// back and then at each frame interval, then the one-camera multi-image
// family. A search's levels are chosen while it runs, after each ladder.
// A profile workload plans its levels instead (ProfileWorkload.Levels).
// Validate the workload first.
func (w Workload) Plan() []PlannedCombo {
	if w.Profile != nil {
		return w.Profile.plan()
	}
	var out []PlannedCombo
	index := map[ComboKey]int{}
	add := func(k ComboKey, n int) {
		if i, ok := index[k]; ok {
			if n > out[i].Requests {
				out[i].Requests = n
			}
			return
		}
		index[k] = len(out)
		out = append(out, PlannedCombo{ComboKey: k, Requests: n})
	}
	cams := append([]int(nil), w.Cameras...)
	sort.Ints(cams)
	for _, s := range w.Sizes {
		for _, c := range cams {
			add(ComboKey{Size: s, Images: 1, Cameras: c}, w.LevelRequests(c, 0))
		}
		for _, t := range w.FrameIntervalSec {
			for _, c := range cams {
				add(ComboKey{Size: s, Images: 1, Cameras: c, FrameIntervalSec: t}, w.LevelRequests(c, t))
			}
		}
	}
	imgs := append([]int(nil), w.ImagesPerRequest...)
	sort.Ints(imgs)
	for _, s := range w.MultiImageSizes {
		for _, n := range imgs {
			add(ComboKey{Size: s, Images: n, Cameras: 1}, w.MultiImageRequests)
		}
	}
	return w.sustainLadders(out)
}

// LevelRequests is the measured requests of a camera level of Sizes back
// to back (interval 0), or its frames due on a frame clock.
func (w Workload) LevelRequests(cameras int, interval float64) int {
	if interval > 0 {
		return cameras * w.PacedTicks(cameras)
	}
	// Every camera sends at least one measured request, or the level
	// would never have as many requests in flight as cameras.
	return max(w.RequestsPerLevel, cameras)
}

// MaxImages is the largest number of images any request of the workload
// carries (a profile's images per request, at least 1).
func (w Workload) MaxImages() int {
	if w.Profile != nil {
		return max(w.Profile.ImagesPerRequest, 1)
	}
	return maxOrOne(w.ImagesPerRequest)
}

// MaxCameras is the highest camera level of the workload: for a profile,
// its highest concurrency level (with the automatic rule, the ceiling),
// which an engine's slots are sized for alike.
func (w Workload) MaxCameras() int {
	if w.Profile != nil {
		return maxOrOne(w.Profile.Levels())
	}
	return maxOrOne(w.Cameras)
}

// maxOrOne is the largest of ns, and at least 1: a workload always has one
// camera sending one image.
func maxOrOne(ns []int) int {
	m := 1
	for _, n := range ns {
		m = max(m, n)
	}
	return m
}

// Limits that keep a workload from a typo that would run for days.
const (
	MaxCameraLevel     = 1024
	MaxImagesInRequest = 64
	MaxRequestsPerComb = 100000
	MaxTokensLimit     = 32768
)

// Validate reports the first field that is wrong and what is allowed.
func (w Workload) Validate() error {
	if err := w.CheckSize(); err != nil {
		return err
	}
	if w.Profile != nil {
		return w.validateProfileWorkload()
	}
	if strings.TrimSpace(w.Prompt) == "" {
		return fmt.Errorf("workload.prompt: must not be empty")
	}
	if w.MaxTokens < 1 || w.MaxTokens > MaxTokensLimit {
		return fmt.Errorf("workload.max_tokens: %d, want 1..%d", w.MaxTokens, MaxTokensLimit)
	}
	if len(w.Sizes) == 0 && len(w.MultiImageSizes) == 0 {
		return fmt.Errorf("workload.sizes: at least one image size is needed")
	}
	if err := checkSizeList("workload.sizes", w.Sizes); err != nil {
		return err
	}
	if err := checkSizeList("workload.multi_image_sizes", w.MultiImageSizes); err != nil {
		return err
	}
	if len(w.Sizes) > 0 {
		if len(w.Cameras) == 0 {
			return fmt.Errorf("workload.cameras: at least one camera level is needed")
		}
		if w.RequestsPerLevel < 1 || w.RequestsPerLevel > MaxRequestsPerComb {
			return fmt.Errorf("workload.requests_per_level: %d, want 1..%d", w.RequestsPerLevel, MaxRequestsPerComb)
		}
	}
	seen := map[int]bool{}
	for i, c := range w.Cameras {
		if c < 1 || c > MaxCameraLevel {
			return fmt.Errorf("workload.cameras[%d]: %d, want 1..%d", i, c, MaxCameraLevel)
		}
		if seen[c] {
			return fmt.Errorf("workload.cameras[%d]: level %d is listed twice", i, c)
		}
		seen[c] = true
	}
	if len(w.MultiImageSizes) > 0 {
		if len(w.ImagesPerRequest) == 0 {
			return fmt.Errorf("workload.images_per_request: needed when multi_image_sizes is set")
		}
		if w.MultiImageRequests < 1 || w.MultiImageRequests > MaxRequestsPerComb {
			return fmt.Errorf("workload.multi_image_requests: %d, want 1..%d", w.MultiImageRequests, MaxRequestsPerComb)
		}
	}
	seenImages := map[int]bool{}
	for i, n := range w.ImagesPerRequest {
		if n < 1 || n > MaxImagesInRequest {
			return fmt.Errorf("workload.images_per_request[%d]: %d, want 1..%d", i, n, MaxImagesInRequest)
		}
		if seenImages[n] {
			return fmt.Errorf("workload.images_per_request[%d]: %d images is listed twice", i, n)
		}
		seenImages[n] = true
	}
	if w.WarmupRequests < 0 || w.WarmupRequests > 100 {
		return fmt.Errorf("workload.warmup_requests: %d, want 0..100", w.WarmupRequests)
	}
	if err := checkLen("workload.prompt", w.Prompt, MaxTextLen); err != nil {
		return err
	}
	if err := w.validateShared(); err != nil {
		return err
	}
	if err := w.validateLoad(); err != nil {
		return err
	}
	return w.validateBuyerOptions()
}

// validateShared checks the fields the camera ladders and a profile both
// use: the request timeout and the pictures.
func (w Workload) validateShared() error {
	if t := w.RequestTimeoutSec; math.IsNaN(t) || t < 0 || t > MaxRequestTimeoutSec {
		return fmt.Errorf("workload.request_timeout_sec: %g, want 0 (no bound) up to %d (24 h)", t, MaxRequestTimeoutSec)
	}
	return checkLen("workload.image_set", w.ImageSet, MaxLineLen)
}

// checkSizeList refuses a size that is not one of the method's, and one
// listed twice: "2k" after "2K" too, which would measure the size twice
// under two names.
func checkSizeList(field string, sizes []string) error {
	for i, s := range sizes {
		sz, err := LookupImageSize(s)
		if err != nil {
			return fmt.Errorf("%s[%d]: %w", field, i, err)
		}
		for j := range i {
			if strings.EqualFold(sizes[j], sz.Name) {
				return fmt.Errorf("%s[%d]: %s is listed twice (%s[%d] too)", field, i, s, field, j)
			}
		}
	}
	return nil
}

// validateBuyerOptions checks the frame intervals, the search and the
// judgement.
func (w Workload) validateBuyerOptions() error {
	seen := map[float64]bool{}
	for i, t := range w.FrameIntervalSec {
		field := fmt.Sprintf("workload.frame_interval_sec[%d]", i)
		if err := checkFrameInterval(field, t); err != nil {
			return err
		}
		if seen[t] {
			return fmt.Errorf("%s: %g s is listed twice", field, t)
		}
		seen[t] = true
	}
	if len(w.FrameIntervalSec) > 0 && len(w.Sizes) == 0 {
		return fmt.Errorf("workload.frame_interval_sec: frame clocks pace the camera levels of workload.sizes, which is empty")
	}
	if w.Search != 0 {
		if len(w.Sizes) == 0 {
			return fmt.Errorf("workload.search: searches the camera levels of workload.sizes; the multi-image family measures one camera only")
		}
		if top := w.MaxCameras(); w.Search < top || w.Search > MaxCameraLevel {
			return fmt.Errorf("workload.search: ceiling %d, want %d (the highest camera level) up to %d", w.Search, top, MaxCameraLevel)
		}
	}
	return w.Judgement.Validate("workload.judgement")
}

// Set is a pointer to v, for the workload's optional switches
// (UniqueImages, CachePrompt).
func Set(v bool) *bool { return &v }

// EffectiveUniqueImages is whether requests carry perturbed pictures:
// as the workload says, and when it does not say, whenever the engine
// has no per-request switch for its cache (cacheSwitch false).
func (w Workload) EffectiveUniqueImages(cacheSwitch bool) bool {
	if w.UniqueImages != nil {
		return *w.UniqueImages
	}
	return !cacheSwitch
}
