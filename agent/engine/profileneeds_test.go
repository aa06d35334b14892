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
