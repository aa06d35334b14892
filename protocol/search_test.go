package protocol

import "testing"

func TestSearchLevel(t *testing.T) {
	w := DefaultWorkload()
	w.Sizes, w.FrameIntervalSec, w.Search = []string{"720p"}, []float64{5}, 64
	for _, c := range []struct {
		k    ComboKey
		want bool
	}{
		{ComboKey{Size: "720p", Images: 1, Cameras: 23, Load: LoadSustained}, true},
		{ComboKey{Size: "720p", Images: 1, Cameras: 64, Load: LoadSustained}, true},
		{ComboKey{Size: "720p", Images: 1, Cameras: 23}, false}, // the search's probes are sustained
		{ComboKey{Size: "720p", Images: 1, Cameras: 40, FrameIntervalSec: 5, Load: LoadSustained}, false},
		{ComboKey{Size: "720p", Images: 1, Cameras: 40, FrameIntervalSec: 5}, true},
		{ComboKey{Size: "720p", Images: 1, Cameras: 65}, false},                      // past the ceiling
		{ComboKey{Size: "720p", Images: 1, Cameras: 40, FrameIntervalSec: 2}, false}, // an interval not measured
		{ComboKey{Size: "480p", Images: 1, Cameras: 23}, false},                      // a size of no ladder
		{ComboKey{Size: "720p", Images: 3, Cameras: 23}, false},                      // the multi-image family
		{ComboKey{Size: "720p", Images: 1, Cameras: 0}, false},
	} {
		if got := w.SearchLevel(c.k); got != c.want {
			t.Errorf("%s: %v, want %v", c.k, got, c.want)
		}
	}
	w.Load = LoadBurst
	if !w.SearchLevel(ComboKey{Size: "720p", Images: 1, Cameras: 23}) || w.SearchLevel(ComboKey{Size: "720p", Images: 1, Cameras: 23, Load: LoadSustained}) {
		t.Error("under load: burst, the search's probes are one round each")
	}
	w.Search = 0
	if w.SearchLevel(ComboKey{Size: "720p", Images: 1, Cameras: 23}) {
		t.Error("a workload without search has no search level")
	}
}
