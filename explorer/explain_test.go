package explorer

import (
	"strings"
	"testing"
)

func pt(size string, images, cameras int, ttft, tps float64) Point {
	return Point{Size: size, Images: images, Cameras: cameras, TTFT: ttft, TPS: tps, Completed: 8}
}

// levels makes 720p one-image points at the given cameras and response times.
func levels(cams []int, ttfts []float64) []Point {
	var out []Point
	for i, c := range cams {
		out = append(out, pt("720p", 1, c, ttfts[i], 30))
	}
	return out
}

func TestExplainForms(t *testing.T) {
	base := Row{RowConfig: RowConfig{Model: "Cosmos-Reason2-2B", ParamsB: 2.4, Quantization: "Q8_0", Engine: "llama.cpp", Device: "Jetson Orin NX"}}
	const first = "Cosmos-Reason2-2B (2.4B parameters), served in Q8_0 format with llama.cpp on Jetson Orin NX, starts answering a single camera that sends one 720p image after "
	const at = "At the default target of an answer starting within 3 s (720p, one image per camera), "
	with := func(mod func(*Row), pts ...Point) Row {
		r := base
		r.Points = pts
		if mod != nil {
			mod(&r)
		}
		return r
	}
	for _, c := range []struct {
		name string
		row  Row
		want []string
	}{
		{"seed paragraph", with(nil, append(levels([]int{1, 2, 4}, []float64{2.02, 2.8, 4.9}), pt("720p", 5, 1, 9.94, 30), pt("1080p", 1, 1, 5.45, 30), pt("480p", 1, 1, 1.5, 30))...), []string{
			first + "2.02 s, then writes 30 tok/s.",
			"With 5 images per camera at 720p, the answer starts after 9.94 s. With one 1080p image, after 5.45 s.",
			at + "it keeps up with 2 cameras at once.",
		}},
		{"none in time", with(nil, levels([]int{1, 2}, []float64{3.04, 5})...), []string{first + "3.04 s, then writes 30 tok/s.", at + "not even one camera is answered in time."}},
		{"one camera at a time", with(nil, levels([]int{1, 2, 4}, []float64{2.71, 4.9, 9})...), []string{first + "2.71 s, then writes 30 tok/s.", at + "it keeps up with one camera at a time."}},
		{"exactly on the target", with(nil, levels([]int{1, 2, 4}, []float64{1, 3, 9})...), []string{first + "1 s, then writes 30 tok/s.", at + "it keeps up with 2 cameras at once."}},
		{"at least N", with(nil, levels([]int{1, 2, 4, 8}, []float64{0.51, 0.93, 1.6, 2.7})...), []string{first + "0.51 s, then writes 30 tok/s.", at + "it keeps up with at least 8 cameras at once: it still met the target at the highest number measured, so the real limit is higher."}},
		{"only one camera measured", with(nil, levels([]int{1}, []float64{0.5})...), []string{first + "0.5 s, then writes 30 tok/s.", at + "it keeps up with one camera, the only number measured, so how it copes with several is not known."}},
		{"several images only", with(nil, pt("720p", 1, 1, 2, 30), pt("720p", 3, 1, 4, 30)), []string{first + "2 s, then writes 30 tok/s.", "With 3 images per camera at 720p, the answer starts after 4 s.", at + "it keeps up with one camera, the only number measured, so how it copes with several is not known."}},
		{"larger size only (largest wins)", with(nil, pt("720p", 1, 1, 2, 30), pt("1080p", 1, 1, 4.34, 30), pt("2K", 1, 1, 18.39, 30), pt("2K", 1, 2, 30, 30)), []string{first + "2 s, then writes 30 tok/s.", "With one 2K image, the answer starts after 18.39 s.", at + "it keeps up with one camera, the only number measured, so how it copes with several is not known."}},
		{"no TPS drops its clause", with(nil, pt("720p", 1, 1, 2, 0)), []string{first + "2 s.", at + "it keeps up with one camera, the only number measured, so how it copes with several is not known."}},
		{"no parameters, quantization or engine", with(func(r *Row) { r.ParamsB, r.Quantization, r.Engine = 0, "", "" }, pt("720p", 1, 1, 2, 30), pt("720p", 1, 2, 4, 30)), []string{
			"Cosmos-Reason2-2B, served on Jetson Orin NX, starts answering a single camera that sends one 720p image after 2 s, then writes 30 tok/s.",
			at + "it keeps up with one camera at a time.",
		}},
		{"nothing to say of the setup", with(func(r *Row) { r.ParamsB, r.Quantization, r.Engine, r.Device = 0, "", "", "" }, pt("720p", 1, 1, 2, 30), pt("720p", 1, 2, 4, 30)), []string{
			"Cosmos-Reason2-2B, starts answering a single camera that sends one 720p image after 2 s, then writes 30 tok/s.",
			at + "it keeps up with one camera at a time.",
		}},
		{"720p with one image not measured", with(nil, pt("1080p", 1, 1, 2, 30), pt("1080p", 1, 2, 2.5, 30)), []string{
			"Cosmos-Reason2-2B (2.4B parameters), served in Q8_0 format with llama.cpp on Jetson Orin NX, was not measured with a single camera that sends one 720p image.",
			"With one 1080p image, the answer starts after 2 s.",
		}},
		{"every default request failed", with(nil, Point{Size: "720p", Images: 1, Cameras: 1, Failed: 8}), []string{
			"Cosmos-Reason2-2B (2.4B parameters), served in Q8_0 format with llama.cpp on Jetson Orin NX, answered no request of a single camera that sends one 720p image: every one failed.",
			at + "not even one camera is answered in time.",
		}},
		{"no points", with(nil), []string{"Cosmos-Reason2-2B (2.4B parameters), served in Q8_0 format with llama.cpp on Jetson Orin NX, was not measured with a single camera that sends one 720p image."}},
		{"no model", Row{Points: levels([]int{1}, []float64{1})}, nil},
	} {
		got := Explain(c.row)
		if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
	}
}

// The first sentences give means whatever the view judges by: judged by a
// percentile they say so, so that a mean is never read as the p90 the
// table beside it shows; by the mean, at any target, they stay the seed's.
func TestExplainAtSaysItsResponseTimesAreAverages(t *testing.T) {
	r := Row{RowConfig: RowConfig{Model: "Cosmos-Reason2-2B", ParamsB: 2.4, Quantization: "Q8_0", Engine: "llama.cpp", Device: "Jetson Orin NX"},
		Points: append(levels([]int{1, 2, 4}, []float64{6.83, 8, 9}), pt("720p", 5, 1, 9.94, 30), pt("1080p", 1, 1, 5.45, 30))}
	const first = "Cosmos-Reason2-2B (2.4B parameters), served in Q8_0 format with llama.cpp on Jetson Orin NX, starts answering a single camera that sends one 720p image after 6.83 s"
	for _, c := range []struct {
		stat   string
		target float64
		single string
		heavy  string
	}{
		{"p90", 3, first + " on average, then writes 30 tok/s.", "With 5 images per camera at 720p, the answer starts after 9.94 s on average. With one 1080p image, after 5.45 s on average."},
		{"p95", 10, first + " on average, then writes 30 tok/s.", "With 5 images per camera at 720p, the answer starts after 9.94 s on average. With one 1080p image, after 5.45 s on average."},
		{"mean", 10, first + ", then writes 30 tok/s.", "With 5 images per camera at 720p, the answer starts after 9.94 s. With one 1080p image, after 5.45 s."},
	} {
		got := ExplainAt(r, Query{Size: "720p", Images: 1, Cameras: 1, Target: c.target, Statistic: c.stat})
		if len(got) < 2 || got[0] != c.single || got[1] != c.heavy {
			t.Errorf("by %s at %g s:\n got %q\nwant %q\nthen %q", c.stat, c.target, got, c.single, c.heavy)
		}
	}
	single := Row{RowConfig: r.RowConfig, Points: []Point{pt("720p", 1, 1, 2, 0), pt("2K", 1, 1, 4, 30)}}
	want := []string{
		"Cosmos-Reason2-2B (2.4B parameters), served in Q8_0 format with llama.cpp on Jetson Orin NX, starts answering a single camera that sends one 720p image after 2 s on average.",
		"With one 2K image, the answer starts after 4 s on average.",
	}
	if got := ExplainAt(single, Query{Size: "720p", Images: 1, Cameras: 1, Target: 3, Statistic: "p90"}); len(got) < 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("no TPS, one larger size, by p90:\n got %q\nwant %q", got, want)
	}
}
