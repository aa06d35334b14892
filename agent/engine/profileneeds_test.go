package engine

import (
	"testing"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// A profile's engine serves its highest level at once, and sizes its
// context for its longest text and answer with its images.
func TestNeedsOfAProfile(t *testing.T) {
	p := &protocol.ProfileWorkload{
		Lengths:          []protocol.LengthPair{{ISL: 1000, OSL: 200}, {ISL: 20000, OSL: 50}},
		Resolutions:      []protocol.Resolution{{Width: 1120, Height: 1120}, {Width: 1648, Height: 2048}},
		ImagesPerRequest: 1, AutoCeiling: 64,
	}
	n := NeedsOf(protocol.Workload{Profile: p})
	if n.MaxCameras != 64 || n.MaxTokens != 200 || n.TextTokens != 20000 || n.MaxWidth != 1648 || n.MaxHeight != 2048 || len(n.Shapes) != 2 {
		t.Errorf("needs %+v", n)
	}
	if est := requestTokens(n.normalized()); est < 20000+200 {
		t.Errorf("request tokens estimated %d, below the text and the answer", est)
	}
	p.Concurrency = []int{1, 8, 4}
	if n := NeedsOf(protocol.Workload{Profile: p}); n.MaxCameras != 8 {
		t.Errorf("listed levels: %d at once, want 8", n.MaxCameras)
	}
}

// Ollama counts an image as 768 tokens when it fits a prompt into its
// context, and cuts one it finds too long: the context holds that much
// per image, and more where the image is larger.
func TestOllamaContextHoldsWhatOllamaCountsAnImageAs(t *testing.T) {
	small := Needs{MaxCameras: 1, MaxImages: 1, MaxTokens: 32, TextTokens: 200, MaxWidth: 320, MaxHeight: 240}.normalized()
	if _, _, needed := ollamaSizing(&resolved{}, small); needed < ollamaImageTokens+200+32 {
		t.Errorf("context %d for a small picture, 200 text tokens and 32 of answer: below Ollama's count", needed)
	}
	large := Needs{MaxCameras: 1, MaxImages: 2, MaxTokens: 64, MaxWidth: 2560, MaxHeight: 1440}.normalized()
	if _, _, needed := ollamaSizing(&resolved{}, large); needed != slotTokens(large) {
		t.Errorf("context %d for two 2K pictures, want the estimate %d", needed, slotTokens(large))
	}
}
