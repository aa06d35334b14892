package realengine

import (
	"math"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/agent/engine"
	"github.com/vlmfleet/vlmfleet/agent/imageset"
	"github.com/vlmfleet/vlmfleet/agent/loadgen"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// A small profile against the real Ollama: the text is sized by Ollama's
// own count of its prompt tokens to the ISL within 1 %, and what Ollama
// does with the OSL, which it has no switch to force, is recorded as it
// is: no switch sent, and every answer's length from its usage.
func TestRealOllamaProfileSizesTheTextAndSaysWhatItDidWithOSL(t *testing.T) {
	ctx := testContext(t, 6*time.Minute)
	w := protocol.Workload{Profile: &protocol.ProfileWorkload{
		Lengths:     []protocol.LengthPair{{ISL: 200, OSL: 32}},
		Resolutions: []protocol.Resolution{{Width: 320, Height: 240}},
		ImageFormat: protocol.ImageFormatPNG, ImagesPerRequest: 1,
		Concurrency: []int{1}, RequestsPerLevel: 3, WarmupRequests: 1,
	}}
	eng, ep := startTinyOllamaFor(t, ctx, engine.NeedsOf(w), nil)
	imgs, err := imageset.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	spec := loadgen.ProfileSpec{Workload: *w.Profile, RequestTimeout: 2 * time.Minute,
		ForcedLength: engine.RequestSwitchesFor(eng.Info(), "").ForcedLength}
	cs, err := loadgen.MeasureProfile(ctx, loadgen.Target{BaseURL: ep.BaseURL, Model: ep.Model}, spec, imgs, loadgen.Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	c := cs[0]
	p := c.Profile
	if c.Completed != 3 || p == nil {
		t.Fatalf("completed %d (%v), profile %v", c.Completed, c.Errors, p)
	}
	if len(p.ForcedBy) != 0 || p.TextTokensEstimated {
		t.Errorf("forced by %v, text estimated %v: want no switch (Ollama has none) and usage read", p.ForcedBy, p.TextTokensEstimated)
	}
	for _, r := range c.Requests {
		text := r.PromptTokens - p.ImageTokens
		if math.Abs(float64(text-200)) > 2 {
			t.Errorf("Ollama counted %d prompt tokens, %d of them text beside the image's %d: not ISL 200 within 1 %%",
				r.PromptTokens, text, p.ImageTokens)
		}
		if r.CompletionTokens > 32 {
			t.Errorf("an answer of %d tokens, above max_tokens 32", r.CompletionTokens)
		}
	}
	t.Logf("Ollama: image and template %d tokens, prompt %.0f tokens; OSL 32: held %v, %d short, mean %.1f; TTFT %.1f ms, ITL %.2f ms, latency %.1f ms",
		p.ImageTokens, p.PromptTokens, p.OSLHeld, p.OSLShort, p.OSLMean, *p.TTFTMs, ptrOr(p.ITLMs), p.RequestLatencyMs)
}

func ptrOr(v *float64) float64 {
	if v == nil {
		return math.NaN()
	}
	return *v
}
