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
