package controller

import (
	"encoding/json"
	"errors"
	"net/http"
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

// POST /api/sweeps takes a YAML sweep file as {"yaml": "..."}, and its
// error answer adds line, column and field to "error".
func TestSubmitSweepYAMLOverAPI(t *testing.T) {
	c := startController(t, t.TempDir())
	announced(t, c, "a1", "d1")
	body, _ := json.Marshal(map[string]string{"yaml": sweepYAMLWithBadCamera})
	status, answer := postJSON(t, c.HTTPURL()+"/api/sweeps", string(body))
	if status != http.StatusBadRequest {
		t.Fatalf("status %d (%s), want 400", status, answer)
	}
	var e struct {
		Error  string `json:"error"`
		Line   int    `json:"line"`
		Column int    `json:"column"`
		Field  string `json:"field"`
	}
	if err := json.Unmarshal([]byte(answer), &e); err != nil {
		t.Fatal(err)
	}
	if e.Line != 6 || e.Column != 5 || e.Field != "workload.cameras[2]" || !strings.Contains(e.Error, "workload.cameras[2]") {
		t.Errorf("answer %s, want line 6 column 5 field workload.cameras[2]", answer)
	}

	good := strings.Replace(sweepYAMLWithBadCamera, "0]", "4]", 1)
	body, _ = json.Marshal(map[string]string{"yaml": good})
	status, answer = postJSON(t, c.HTTPURL()+"/api/sweeps", string(body))
	if status != http.StatusCreated {
		t.Fatalf("status %d (%s), want 201", status, answer)
	}
	var s struct {
		ID   string   `json:"id"`
		Name string   `json:"name"`
		Jobs []string `json:"jobs"`
	}
	if err := json.Unmarshal([]byte(answer), &s); err != nil {
		t.Fatal(err)
	}
	if s.Name != "bad cameras" || len(s.Jobs) != 1 {
		t.Errorf("stored sweep %s, want the YAML's name and one job", answer)
	}

	// A sweep in JSON answers as before: only "error" when nothing is known
	// of a position.
	status, answer = postJSON(t, c.HTTPURL()+"/api/sweeps", `{"agents":["a1"],"yaml":"x"}`)
	if status != http.StatusBadRequest || !strings.Contains(answer, `unknown field \"yaml\"`) || strings.Contains(answer, `"line"`) {
		t.Errorf("a JSON sweep with a yaml field: %d %s", status, answer)
	}
	// A sweep in JSON, or one refused when scheduled, names the field.
	status, answer = postJSON(t, c.HTTPURL()+"/api/sweeps", `{"agents":["a1"],"deployments":["nope"]}`)
	if status != http.StatusBadRequest || !strings.Contains(answer, `"field": "deployments[0]"`) || strings.Contains(answer, `"line"`) {
		t.Errorf("a sweep naming a deployment nobody offers: %d %s", status, answer)
	}
}
