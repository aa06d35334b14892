package explorer

import (
	"slices"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// The default settings of the page, at which the explanation is written.
const (
	DefaultSize    = "720p"
	DefaultImages  = 1
	DefaultCameras = 1
	DefaultTarget  = 3.0
)

// Explain writes a row in plain language at the default settings (720p, one
// image per camera, 3 s target by the mean), in the seed's sentences and
// number formats: one string per line of the seed's paragraph. A figure
// that was not measured drops its clause or line rather than printing a
// made-up value.
func Explain(r Row) []string { return ExplainAt(r, DefaultQuery()) }

// ExplainAt writes the row as Explain does, at q's size and images per
// camera and judged as q judges (its statistic and target), so that every
// sentence gives the Max Cameras the table beside it shows; the response
// times of the first sentences stay means, and under a percentile say
// "on average". q's cameras and frame interval do not matter: the
// sentences cover back to back and every frame clock measured.
func ExplainAt(r Row, q Query) []string {
	if r.Model == "" {
		return nil
	}
	j := q.Judgement()
	avg := averageWords(j)
	var out []string
	out = append(out, explainSingle(r, q.Size, avg))
	if s := explainHeavier(r.Points, avg); s != "" {
		out = append(out, s)
	}
	if s := JudgedSentence(r.Points, q.Size, q.Images, 0, j); s != "" {
		out = append(out, s)
	}
	for _, t := range Intervals(r.Points) {
		if s := JudgedSentence(r.Points, q.Size, q.Images, t, j); s != "" {
			out = append(out, s)
		}
	}
	if s := EnergySentence(r.Points, q.Size, q.Images, 0, j); s != "" {
		out = append(out, s)
	}
	return out
}

// averageWords follows each response time of the first sentences, which
// are means whatever the view judges by: under a percentile they say so,
// so that "after 6.83 s" beside a p90 column is not read as the p90. By
// the mean they are the seed's words, unchanged.
func averageWords(j protocol.Judgement) string {
	if j.Stat() == protocol.StatisticMean {
		return ""
	}
	return " on average"
}

// explainsAtDefault says whether q reads the row where Explain writes it:
// then the row's stored explanation is the answer at q.
func explainsAtDefault(q Query) bool {
	d := DefaultQuery()
	return q.Size == d.Size && q.Images == d.Images && q.Judgement().Stat() == protocol.StatisticMean && q.Target == d.Target
}

// explainSingle: "M (2.4B parameters), served in Q8_0 format with llama.cpp on
// Jetson Orin NX, starts answering a single camera that sends one 720p image
// after 2.02 s, then writes 30.4 tok/s." avg follows the response time.
func explainSingle(r Row, size, avg string) string {
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
		if r.PowerMode != "" {
			// The setting is part of the row: say which one it speaks of.
			served += " (" + r.PowerMode + ")"
		}
	}
	if served != "" {
		s += ", served" + served
	}
	p, ok := FindPoint(r.Points, size, DefaultImages, DefaultCameras)
	switch {
	case !ok:
		return s + ", was not measured with a single camera that sends one " + size + " image."
	case p.Completed == 0:
		return s + ", answered no request of a single camera that sends one " + size + " image: every one failed."
	}
	s += ", starts answering a single camera that sends one " + size + " image after " + FormatSeconds(p.TTFT) + " s" + avg
	if p.TPS > 0 {
		s += ", then writes " + FormatTPS(p.TPS) + " tok/s"
	}
	return s + "."
}

// explainHeavier: the largest image count measured at 720p with one camera,
// and the largest image size measured with one image and one camera: "With 5
// images per camera at 720p, the answer starts after 9.94 s. With one 1080p
// image, after 5.45 s." avg follows each response time.
func explainHeavier(points []Point, avg string) string {
	var multi, large *Point
	for i := range points {
		p := &points[i]
		if p.Completed == 0 || p.Cameras != 1 || p.Paced() {
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
			FormatSeconds(multi.TTFT) + " s" + avg + ". With one " + large.Size + " image, after " + FormatSeconds(large.TTFT) + " s" + avg + "."
	case multi != nil:
		return "With " + itoa(multi.Images) + " images per camera at " + DefaultSize + ", the answer starts after " +
			FormatSeconds(multi.TTFT) + " s" + avg + "."
	case large != nil:
		return "With one " + large.Size + " image, the answer starts after " + FormatSeconds(large.TTFT) + " s" + avg + "."
	}
	return ""
}

// Intervals lists the frame clocks measured, shortest first (0, back to
// back, is not one).
func Intervals(points []Point) []float64 {
	var out []float64
	for _, p := range points {
		if p.Paced() && !slices.Contains(out, p.FrameIntervalSec) {
			out = append(out, p.FrameIntervalSec)
		}
	}
	slices.Sort(out)
	return out
}

// JudgedSentence says Max Cameras at size, images and frame interval under
// j, in the seed's words; the page's logic.js judgedSentence writes the
// same for the view it shows. "" when nothing was measured there.
func JudgedSentence(points []Point, size string, images int, interval float64, j protocol.Judgement) string {
	if !MeasuredAt(points, size, images, interval) {
		return ""
	}
	goal := judgedGoal(j, interval > 0)
	var s string
	if interval > 0 {
		s = "At one frame every " + FormatInterval(interval) + " s per camera (" + size + ", " + imagesWords(images) + "), "
	} else {
		target := "a target"
		if j.Stat() == protocol.StatisticMean && j.Target() == DefaultTarget {
			target = "the default target"
		}
		s = "At " + target + " of " + goal + " (" + size + ", " + imagesWords(images) + " per camera), "
	}
	if !Judgeable(points, size, images, interval, j) {
		return s + "it cannot be judged by " + j.Stat() + ": the row was published with its means only, not its slow answers."
	}
	max, plus := MaxCamerasJudged(points, size, images, interval, j)
	if interval > 0 {
		return s + pacedVerdict(max, plus, goal) + exactClause(points, size, images, interval, max) + "."
	}
	switch {
	case max == 0:
		return s + "not even one camera is answered in time."
	case max == 1 && plus:
		// The seed's "at least N ... the real limit is higher" would claim too
		// much here: "a row measured with one camera only says nothing about
		// how it behaves with several."
		return s + "it keeps up with one camera, the only number measured, so how it copes with several is not known."
	case max == 1:
		return s + "it keeps up with one camera at a time" + exactClause(points, size, images, interval, max) + "."
	case plus:
		return s + "it keeps up with at least " + itoa(max) +
			" cameras at once: it still met the target at the highest number measured, so the real limit is higher."
	}
	return s + "it keeps up with " + itoa(max) + " cameras at once" + exactClause(points, size, images, interval, max) + "."
}

// judgedGoal is what a passing level met: "an answer starting within 3 s"
// by the mean ("each answer" on a frame clock, where every frame must be
// answered), "9 of 10 answers starting within 3 s" by p90.
func judgedGoal(j protocol.Judgement, paced bool) string {
	within := " starting within " + FormatSeconds(j.Target()) + " s"
	switch j.Stat() {
	case protocol.StatisticP90:
		return "9 of 10 answers" + within
	case protocol.StatisticP95:
		return "19 of 20 answers" + within
	}
	if paced {
		return "each answer" + within
	}
	return "an answer" + within
}

// pacedVerdict is the paced sentence's verdict, after its "At one frame
// every T s per camera (size, one image), ".
func pacedVerdict(max int, plus bool, goal string) string {
	met := "every frame answered, " + goal
	switch {
	case max == 0:
		return "not even one camera has " + met
	case max == 1 && plus:
		return "it keeps up with one camera, the only number measured: " + met
	case max == 1:
		return "it keeps up with one camera: " + met
	case plus:
		return "it keeps up with at least " + itoa(max) + " cameras: " + met + ", still at the highest number measured, so the real limit is higher"
	}
	return "it keeps up with " + itoa(max) + " cameras: " + met
}

// exactClause: where a search measured the level above Max Cameras, the
// figure is exact, and the sentence says so: "; with 24, also measured,
// it does not". A ladder's neighbours (1 and 2) need no such clause.
func exactClause(points []Point, size string, images int, interval float64, max int) string {
	if max == 0 || !Searched(points, size, images, interval) {
		return ""
	}
	if _, ok := FindPointAt(points, size, images, max+1, interval); !ok {
		return ""
	}
	return "; with " + itoa(max+1) + ", also measured, it does not"
}

// imagesWords: "one image", "3 images".
func imagesWords(n int) string {
	if n == 1 {
		return "one image"
	}
	return itoa(n) + " images"
}
