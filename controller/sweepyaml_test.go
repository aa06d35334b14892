package controller

import (
	"encoding/json"
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
	// A bad search or statistic is refused before any job is made: in
	// YAML at its line and column, in JSON by its field.
	body, _ = json.Marshal(map[string]string{"yaml": "agents: [a1]\nworkload:\n  judgement:\n    statistic: p50\n"})
	status, answer = postJSON(t, c.HTTPURL()+"/api/sweeps", string(body))
	if status != http.StatusBadRequest || !strings.Contains(answer, `"line": 4`) || !strings.Contains(answer, `"column": 16`) ||
		!strings.Contains(answer, `"field": "workload.judgement.statistic"`) {
		t.Errorf("a YAML sweep with statistic p50: %d %s", status, answer)
	}
	status, answer = postJSON(t, c.HTTPURL()+"/api/sweeps", `{"agents":["a1"],"workload":{"cameras":[1,16],"search":8}}`)
	if status != http.StatusBadRequest || !strings.Contains(answer, `"field": "workload.search"`) || !strings.Contains(answer, "ceiling 8, want 16") {
		t.Errorf("a JSON sweep with a search ceiling below its ladder: %d %s", status, answer)
	}
	// A sweep in JSON, or one refused when scheduled, names the field.
	status, answer = postJSON(t, c.HTTPURL()+"/api/sweeps", `{"agents":["a1"],"deployments":["nope"]}`)
	if status != http.StatusBadRequest || !strings.Contains(answer, `"field": "deployments[0]"`) || strings.Contains(answer, `"line"`) {
		t.Errorf("a sweep naming a deployment nobody offers: %d %s", status, answer)
	}
}

// POST /api/sweeps says where a refused file went past the limit.
func TestSubmitDeepSweepYAMLOverAPI(t *testing.T) {
	c := startController(t, t.TempDir())
	body, _ := json.Marshal(map[string]string{"yaml": "name: x\nworkload:\n  cameras: " + strings.Repeat("[", 40000) + strings.Repeat("]", 40000)})
	status, answer := postJSON(t, c.HTTPURL()+"/api/sweeps", string(body))
	var e struct {
		Error        string
		Line, Column int
	}
	if err := json.Unmarshal([]byte(answer), &e); err != nil {
		t.Fatal(err)
	}
	if status != http.StatusBadRequest || e.Line != 3 || e.Column != 44 || !strings.Contains(e.Error, "nested more than 32 deep") {
		t.Errorf("answer %d %s, want 400 at line 3 column 44", status, answer)
	}
}
