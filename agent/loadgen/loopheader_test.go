package loadgen

import (
	"strings"
	"testing"
)

func TestLoopField(t *testing.T) {
	b := appendLoopField(nil, "k3x", 5, 24, 16)
	line := string(b)
	name, value, ok := strings.Cut(strings.TrimSuffix(line, "\r\n"), ": ")
	if !ok || name != LoopHeader || !strings.HasSuffix(line, "\r\n") {
		t.Fatalf("field %q", line)
	}
	f, ok := ParseLoopField(value)
	if !ok || f != (LoopField{ID: "k3x", Seq: 5, Total: 24, Cameras: 16}) {
		t.Fatalf("ParseLoopField(%q) = %+v, %v", value, f, ok)
	}
	for _, bad := range []string{"", "a 1 2", "a 1 2 3 4", "a -1 2 3", "a 2 2 1", "a 0 1 0", "a x 1 1", strings.Repeat("a", 65) + " 0 1 1",
		"a 0 2 1 last", "a 0 0 1 more", "a 0 0 0 last", "a 0 0 1 last x"} {
		if f, ok := ParseLoopField(bad); ok {
			t.Errorf("ParseLoopField(%q) = %+v, want refused", bad, f)
		}
	}
}

// An open loop (a sustained level) says 0 requests, and marks each
// camera's last request.
func TestOpenLoopField(t *testing.T) {
	for _, last := range []bool{false, true} {
		line := string(appendOpenLoopField(nil, "k3x", 41, 8, last))
		_, value, _ := strings.Cut(strings.TrimSuffix(line, "\r\n"), ": ")
		f, ok := ParseLoopField(value)
		if want := (LoopField{ID: "k3x", Seq: 41, Cameras: 8, Open: true, Last: last}); !ok || f != want {
			t.Errorf("ParseLoopField(%q) = %+v, %v; want %+v", value, f, ok, want)
		}
	}
}

func TestFrameField(t *testing.T) {
	b := appendFrameField(nil, "k3x", 2, 5, 4, 8, 0.125)
	line := string(b)
	name, value, ok := strings.Cut(strings.TrimSuffix(line, "\r\n"), ": ")
	if !ok || name != FrameHeader || !strings.HasSuffix(line, "\r\n") {
		t.Fatalf("field %q", line)
	}
	f, ok := ParseFrameField(value)
	if !ok || f != (FrameField{ID: "k3x", Camera: 2, Tick: 5, Cameras: 4, Ticks: 8, Interval: 0.125}) {
		t.Fatalf("ParseFrameField(%q) = %+v, %v", value, f, ok)
	}
	for _, bad := range []string{"", "a 0 0 1 1", "a 0 0 1 1 1 1", "a 1 0 1 1 1", "a 0 1 1 1 1", "a -1 0 1 1 1",
		"a 0 0 1 1 0", "a 0 0 1 1 NaN", "a 0 0 1 1 -1", "a 0 0 1 1 x", strings.Repeat("a", 65) + " 0 0 1 1 1"} {
		if f, ok := ParseFrameField(bad); ok {
			t.Errorf("ParseFrameField(%q) = %+v, want refused", bad, f)
		}
	}
}
