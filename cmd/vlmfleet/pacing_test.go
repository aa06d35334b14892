package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// bench --frame-interval measures every camera level again on a frame
// clock, after the back-to-back ladder, and records and prints the frames
// each level was due, sent and dropped.
func TestBenchFrameIntervalMeasuresPacedLevels(t *testing.T) {
	srv, _ := benchFakeEngine(t)
	jsonPath := filepath.Join(t.TempDir(), "run.json")
	code, out, errOut := runCLI(t, "bench", "--url", srv.URL+"/v1", "--model", "fake-vlm", "--sizes", "480p", "--multi-sizes", "none",
		"--cameras", "1,2", "--requests", "4", "--warmup", "1", "--frame-interval", "0.1", "--target", "1",
		"--image-dir", snapshotDir(t), "--json", jsonPath)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	t.Log(out)
	r := readRun(t, jsonPath)
	var keys []string
	for _, c := range r.Combinations {
		keys = append(keys, c.ComboKey.String())
		if err := c.Validate(); err != nil {
			t.Errorf("%s: %v", c.ComboKey, err)
		}
		if c.Paced() != (c.Pacing != nil) {
			t.Errorf("%s: pacing %+v", c.ComboKey, c.Pacing)
		}
	}
	if got := strings.Join(keys, " "); got != "480p-1img-1cam 480p-1img-2cam 480p-1img-1cam-every0.1s 480p-1img-2cam-every0.1s" {
		t.Fatalf("combinations %s", got)
	}
	// Four ticks per camera at least; the fake engine answers at once, so
	// no frame is dropped.
	for i, due := range map[int]int{2: 4, 3: 8} {
		c := r.Combinations[i]
		if c.Pacing.FramesDue != due || c.Pacing.FramesDropped != 0 || c.Completed != due || c.Warmup != c.Cameras ||
			c.Tail == nil || c.Tail.Due != due || c.Pacing.Age.N != due {
			t.Errorf("%s: pacing %+v, completed %d, warm-up %d, tail %+v; want %d frames answered", c.ComboKey, c.Pacing, c.Completed, c.Warmup, c.Tail, due)
		}
	}
	for _, want := range []string{"One frame every 0.1 s per camera", "Max Cameras at target 1 s, 480p: 2+", "480p   2+"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
}

// A bad frame interval is refused before anything runs, by bench and
// sweep alike, naming the flag and what it allows.
func TestFrameIntervalFlagErrors(t *testing.T) {
	for _, cmd := range [][]string{{"bench", "--url", "http://127.0.0.1:1/v1", "--model", "m"}, {"sweep"}} {
		for _, v := range []string{"0", "-5", "nan", "5,x"} {
			code, _, errOut := runCLI(t, append(cmd, "--frame-interval", v)...)
			if code != 2 || !strings.Contains(errOut, "--frame-interval: ") || !strings.Contains(errOut, "is not a number of seconds above 0 and up to 3600") {
				t.Errorf("%s --frame-interval %s: exit %d, %q; want 2 naming the flag", cmd[0], v, code, errOut)
			}
		}
	}
}
