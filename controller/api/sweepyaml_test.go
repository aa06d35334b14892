package api

import (
	"errors"
	"strings"
	"testing"
)

const sweepYAMLWithBadCamera = `name: bad cameras
agents: [a1]
workload:
  sizes: [480p]
  cameras: [1, 2,
    0]
  multi_image_sizes: []
`

// A validation error names the line of the field it is about, as the
// YAML was written, and the field.
func TestDecodeSweepYAMLErrorsCarryTheirLine(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		line       int
		field      string
		msg        string
	}{
		{"validation of a list item", sweepYAMLWithBadCamera, 6, "workload.cameras[2]", "workload.cameras[2]: 0, want 1.."},
		{"validation of a field left out: its parent", "agents: [a1]\nworkload:\n  sizes: []\n  multi_image_sizes: []\n", 3, "workload.sizes", "at least one image size"},
		{"unknown field", "agents: [a1]\nworkload:\n  camras: [1]\n", 3, "", `unknown field "camras"`},
		{"syntax: where the decoder finds it", "agents: [a1\nworkload: {}\n", 2, "", "sweep: line 2"},
		{"type", "agents: [a1]\nworkload:\n  cameras: lots\n", 3, "", "sweep: line 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeSweepYAML([]byte(tc.yaml))
			var in *SweepInputError
			if !errors.As(err, &in) {
				t.Fatalf("error %v (%T), want a SweepInputError", err, err)
			}
			var bad *BadSweepError
			if !errors.As(err, &bad) {
				t.Errorf("error %v is not a BadSweepError (the API's 400)", err)
			}
			if in.Line != tc.line || in.Field != tc.field || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("got line %d field %q %q, want line %d field %q and %q", in.Line, in.Field, err, tc.line, tc.field, tc.msg)
			}
		})
	}
	s, err := DecodeSweepYAML([]byte("agents: [a1]\nworkload:\n  cameras: [1, 2]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Workload.Sizes) == 0 || s.Workload.RequestsPerLevel == 0 {
		t.Errorf("fields left out did not take the defaults: %+v", s.Workload)
	}
}

// A frame interval that is not a positive, finite number of seconds is
// refused where it was written.
func TestDecodeSweepYAMLRefusesABadFrameInterval(t *testing.T) {
	for _, v := range []string{"0", "-1", ".nan", ".inf", "3601", `"x"`, "[5]"} {
		t.Run(v, func(t *testing.T) {
			yaml := "agents: [a1]\nworkload:\n  sizes: [720p]\n  frame_interval_sec: [5,\n    " + v + "]\n"
			_, err := DecodeSweepYAML([]byte(yaml))
			var in *SweepInputError
			if !errors.As(err, &in) {
				t.Fatalf("error %v (%T), want a SweepInputError", err, err)
			}
			if in.Line != 5 || in.Column != 5 {
				t.Errorf("refused at line %d column %d, want line 5 column 5: %v", in.Line, in.Column, err)
			}
			// A number is checked by the workload's rule, anything else by
			// its type.
			want := "workload.frame_interval_sec[1]: "
			if strings.ContainsAny(v, `"[`) {
				want = "cannot unmarshal"
			} else if !strings.Contains(err.Error(), "want a positive number of seconds up to 3600") {
				t.Errorf("error %q does not say what is allowed", err)
			}
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q, want %q", err, want)
			}
		})
	}
	s, err := DecodeSweepYAML([]byte("agents: [a1]\nworkload:\n  frame_interval_sec: [5, 0.5]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Workload.FrameIntervalSec) != 2 || s.Workload.FrameIntervalSec[1] != 0.5 {
		t.Errorf("frame intervals %v, want [5 0.5]", s.Workload.FrameIntervalSec)
	}
}
