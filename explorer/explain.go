package explorer

import "github.com/vlmfleet/vlmfleet/protocol"

// The default settings of the page, at which the explanation is written.
const (
	DefaultSize    = "720p"
	DefaultImages  = 1
	DefaultCameras = 1
	DefaultTarget  = 3.0
)

// Explain writes a row in plain language at the default settings (720p, one
// image per camera, 3 s target), in the seed's sentences and number formats:
// one string per line of the seed's paragraph. A figure that was not measured
// drops its clause or line rather than printing a made-up value.
func Explain(r Row) []string {
	if r.Model == "" {
		return nil
	}
	var out []string
	out = append(out, explainSingle(r))
	if s := explainHeavier(r.Points); s != "" {
		out = append(out, s)
	}
	if s := explainTarget(r.Points); s != "" {
		out = append(out, s)
	}
	return out
}

// explainSingle: "M (2.4B parameters), served in Q8_0 format with llama.cpp on
// Jetson Orin NX, starts answering a single camera that sends one 720p image
// after 2.02 s, then writes 30.4 tok/s."
func explainSingle(r Row) string {
	s := r.Model
	if r.ParamsB > 0 {
		s += " (" + FormatParams(r.ParamsB) + "B parameters)"
	}
	served := ""
	if r.Quantization != "" {
		served += " in " + r.Quantization + " format"
	}
	if r.Engine != "" {
		served += " with " + r.Engine
	}
	if r.Device != "" {
		served += " on " + r.Device
	}
	if served != "" {
		s += ", served" + served
	}
	p, ok := FindPoint(r.Points, DefaultSize, DefaultImages, DefaultCameras)
	switch {
	case !ok:
		return s + ", was not measured with a single camera that sends one " + DefaultSize + " image."
	case p.Completed == 0:
		return s + ", answered no request of a single camera that sends one " + DefaultSize + " image: every one failed."
	}
	s += ", starts answering a single camera that sends one " + DefaultSize + " image after " + FormatSeconds(p.TTFT) + " s"
	if p.TPS > 0 {
		s += ", then writes " + FormatTPS(p.TPS) + " tok/s"
	}
	return s + "."
}

// explainHeavier: the largest image count measured at 720p with one camera,
// and the largest image size measured with one image and one camera: "With 5
// images per camera at 720p, the answer starts after 9.94 s. With one 1080p
// image, after 5.45 s."
func explainHeavier(points []Point) string {
	var multi, large *Point
	for i := range points {
		p := &points[i]
		if p.Completed == 0 || p.Cameras != 1 {
			continue
		}
		if p.Size == DefaultSize && p.Images > 1 && (multi == nil || p.Images > multi.Images) {
			multi = p
		}
		if p.Images == 1 && protocol.SizeRank(p.Size) > protocol.SizeRank(DefaultSize) &&
			protocol.SizeRank(p.Size) < len(protocol.ImageSizes()) &&
			(large == nil || protocol.SizeRank(p.Size) > protocol.SizeRank(large.Size)) {
			large = p
		}
	}
	switch {
	case multi != nil && large != nil:
		return "With " + itoa(multi.Images) + " images per camera at " + DefaultSize + ", the answer starts after " +
			FormatSeconds(multi.TTFT) + " s. With one " + large.Size + " image, after " + FormatSeconds(large.TTFT) + " s."
	case multi != nil:
		return "With " + itoa(multi.Images) + " images per camera at " + DefaultSize + ", the answer starts after " +
			FormatSeconds(multi.TTFT) + " s."
	case large != nil:
		return "With one " + large.Size + " image, the answer starts after " + FormatSeconds(large.TTFT) + " s."
	}
	return ""
}

// explainTarget: Max Cameras at the default target, in the seed's variants.
func explainTarget(points []Point) string {
	if !Measured(points, DefaultSize, DefaultImages) {
		return ""
	}
	max, plus := MaxCameras(points, DefaultSize, DefaultImages, DefaultTarget)
	s := "At the default target of an answer starting within " + FormatSeconds(DefaultTarget) + " s (" +
		DefaultSize + ", one image per camera), "
	switch {
	case max == 0:
		return s + "not even one camera is answered in time."
	case max == 1 && plus:
		// The seed's "at least N ... the real limit is higher" would claim too
		// much here: "a row measured with one camera only says nothing about
		// how it behaves with several."
		return s + "it keeps up with one camera, the only number measured, so how it copes with several is not known."
	case max == 1:
		return s + "it keeps up with one camera at a time."
	case plus:
		return s + "it keeps up with at least " + itoa(max) +
			" cameras at once: it still met the target at the highest number measured, so the real limit is higher."
	}
	return s + "it keeps up with " + itoa(max) + " cameras at once."
}
