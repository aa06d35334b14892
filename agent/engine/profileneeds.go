package engine

import (
	"slices"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// profileNeeds are the needs of a profile workload: its highest
// concurrency (the automatic rule's ceiling when it lists none) served at
// once, its images at each of its sizes, its longest text and answer.
func profileNeeds(p protocol.ProfileWorkload) Needs {
	n := Needs{MaxCameras: p.AutoCeiling, MaxImages: p.ImagesPerRequest}
	if len(p.Concurrency) > 0 {
		n.MaxCameras = slices.Max(p.Concurrency)
	}
	for _, lp := range p.Lengths {
		n.MaxTokens = max(n.MaxTokens, lp.OSL)
		n.TextTokens = max(n.TextTokens, lp.ISL)
	}
	for _, r := range p.Resolutions {
		n.MaxWidth, n.MaxHeight = max(n.MaxWidth, r.Width), max(n.MaxHeight, r.Height)
		if p.ImagesPerRequest > 0 {
			n.Shapes = append(n.Shapes, Shape{Images: p.ImagesPerRequest, Width: r.Width, Height: r.Height})
		}
	}
	return n
}
