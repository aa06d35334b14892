package simengine

import (
	"bytes"
	"context"
	"encoding/base64"
	"image"
	"image/png"
	"math"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/agent/loadgen"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// noisePNG is a data URL of a w×h PNG of noise, which PNG cannot
// compress: about 4 MB of base64 at 1120x1120, as large as a profile's
// PNG pictures get.
func noisePNG(t testing.TB, w, h int) string {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	r := rand.New(rand.NewPCG(1, 2))
	for i := range img.Pix {
		img.Pix[i] = byte(r.Uint32())
	}
	for i := 3; i < len(img.Pix); i += 4 {
		img.Pix[i] = 255
	}
	var b bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return "data:image/png;base64," + base64.StdEncoding.EncodeToString(b.Bytes())
}

// samePicture is one data URL for every request of a profile.
type samePicture struct{ url string }

func (s samePicture) ProfilePicture(protocol.Resolution, string, int, uint64) (string, string, error) {
	return s.url, "", nil
}

// In a profile level each worker's next request starts, in the records,
// where its previous answer ended: the simulator holds its clock while it
// reads and parses a request, tens of milliseconds of the host's time for
// a large picture, and that time, waited once for every answer that ended
// before, is no engine time and must not sit in the level's throughput
// window.
func TestProfileLevelNextRequestStartsAtThePreviousEnd(t *testing.T) {
	const speedup, concurrency = 5, 8
	p, err := LookupTP("H100-HBM3-80GB", "Llama-3.2-11B-Vision-Instruct", "FP8", "", 1)
	if err != nil {
		t.Fatal(err)
	}
	url := serve(t, p, Options{ServedName: "m", Speedup: speedup})
	spec := loadgen.ProfileSpec{
		Workload: protocol.ProfileWorkload{
			Lengths:     []protocol.LengthPair{{ISL: 100, OSL: 100}},
			Resolutions: []protocol.Resolution{{Width: 1120, Height: 1120}},
			ImageFormat: protocol.ImageFormatPNG, ImagesPerRequest: 1,
			Concurrency: []int{concurrency}, RequestsPerLevel: 2 * concurrency, WarmupRequests: 1,
		},
		RequestTimeout: time.Minute,
		ForcedLength: func(n int) map[string]any {
			return map[string]any{"max_tokens": n, "min_tokens": n, "ignore_eos": true}
		},
	}
	target := loadgen.Target{BaseURL: url, Model: "m", Speedup: speedup, Simulated: true}
	cs, err := loadgen.MeasureProfile(context.Background(), target, spec, samePicture{noisePNG(t, 1120, 1120)}, loadgen.Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 1 || cs[0].Failed > 0 || len(cs[0].Requests) != 2*concurrency {
		t.Fatalf("levels %d; want one of %d requests, none failed: %+v", len(cs), 2*concurrency, cs)
	}
	byCamera := map[int][]protocol.RequestRecord{}
	for _, rec := range cs[0].Requests {
		byCamera[rec.Camera] = append(byCamera[rec.Camera], rec)
	}
	worst := 0.0
	for cam, recs := range byCamera {
		sort.Slice(recs, func(i, j int) bool { return recs[i].Start < recs[j].Start })
		for i := 1; i < len(recs); i++ {
			prev := recs[i-1]
			gap := recs[i].Start - (prev.Start + prev.E2E)
			worst = math.Max(worst, math.Abs(gap)/prev.E2E)
			if math.Abs(gap) > 0.05*prev.E2E {
				t.Errorf("camera %d: request %d starts %.1f ms after request %d's answer of %.1f ms ended; want within 5 %% of it",
					cam, recs[i].Seq, gap*1000, prev.Seq, prev.E2E*1000)
			}
		}
	}
	t.Logf("largest gap between an answer's end and its camera's next start: %.2f %% of the answer", worst*100)
}

// An answer sent in one piece is timed on the simulator's clock too: at
// the speed-up that keeps nemoretriever-parse's 494 ms a few real
// milliseconds, reading a 1648x2048 picture would otherwise add the
// host's tens of milliseconds, multiplied, to every latency.
func TestProfileLevelNotStreamedIsOnTheSimulatorsClock(t *testing.T) {
	const speedup = 49
	p, err := LookupTP("H100-SXM-80GB", "nemoretriever-parse", "BF16", "", 1)
	if err != nil {
		t.Fatal(err)
	}
	url := serve(t, p, Options{ServedName: "m", Speedup: speedup})
	spec := loadgen.ProfileSpec{
		Workload: protocol.ProfileWorkload{
			Lengths:     []protocol.LengthPair{{OSL: 200}},
			Resolutions: []protocol.Resolution{{Width: 1648, Height: 2048}},
			ImageFormat: protocol.ImageFormatPNG, ImagesPerRequest: 1, NoStream: true,
			Concurrency: []int{1}, RequestsPerLevel: 4, WarmupRequests: 1,
		},
		Prompt:         "Parse the page.",
		RequestTimeout: time.Minute,
		ForcedLength: func(n int) map[string]any {
			return map[string]any{"max_tokens": n, "min_tokens": n, "ignore_eos": true}
		},
	}
	target := loadgen.Target{BaseURL: url, Model: "m", Speedup: speedup, Simulated: true}
	cs, err := loadgen.MeasureProfile(context.Background(), target, spec, samePicture{noisePNG(t, 1648, 2048)}, loadgen.Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 1 || cs[0].Failed > 0 || cs[0].Profile == nil {
		t.Fatalf("levels %+v; want one, none failed", cs)
	}
	lv := cs[0].Profile
	if lv.TTFTMs != nil || lv.ITLMs != nil {
		t.Errorf("TTFT %v, ITL %v: an answer in one piece has neither", lv.TTFTMs, lv.ITLMs)
	}
	// nemoretriever-parse on H100-SXM-80GB at OSL 200, as published; the
	// level's figures are on the simulator's scale until measure scales
	// them back.
	if got := lv.RequestLatencyMs * speedup; math.Abs(got-494)/494 > 0.10 {
		t.Errorf("request latency %.0f ms, want the published 494 ms within 10 %%", got)
	}
}
