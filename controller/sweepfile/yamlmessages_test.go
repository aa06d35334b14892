package sweepfile

import (
	"errors"
	"strings"
	"testing"

	"github.com/vlmfleet/vlmfleet/controller/api"
)

// A misspelt field is refused at its line and column with the field of
// that mapping it most likely meant.
func TestDecodeSweepYAMLSuggestsTheFieldMeant(t *testing.T) {
	for _, tc := range []struct {
		yaml         string
		line, column int
		want         string
	}{
		{"workload:\n  judgment: {statistic: p90}\n", 2, 3, `unknown field "judgment" in workload; did you mean "judgement"?`},
		{"workload:\n  camras: [1, 2]\n", 2, 3, `unknown field "camras" in workload; did you mean "cameras"?`},
		{"agents: [a1]\npower_mode: [15W]\n", 2, 1, `unknown field "power_mode" at the top level; did you mean "power_modes"?`},
		{"workload:\n  judgement:\n    statistc: p90\n", 3, 5, `unknown field "statistc" in workload.judgement; did you mean "statistic"?`},
		{"workload:\n  zzz: 1\n", 2, 3, `unknown field "zzz" in workload; the fields there are cache_prompt, cameras,`},
	} {
		_, err := DecodeYAML([]byte(tc.yaml))
		var in *api.SweepInputError
		if !errors.As(err, &in) {
			t.Fatalf("%q: error %v (%T), want a api.SweepInputError", tc.yaml, err, err)
		}
		if in.Line != tc.line || in.Column != tc.column || !strings.Contains(in.Error(), tc.want) {
			t.Errorf("%q: line %d column %d %q, want line %d column %d and %q", tc.yaml, in.Line, in.Column, in.Error(), tc.line, tc.column, tc.want)
		}
	}
}

// Every problem of a file is reported at once, in the order of the file,
// up to maxSweepErrors, each with its line and column, and the position is
// said once: "sweep: line 2 column 3: ...", never "line 2: sweep: line 2".
func TestDecodeSweepYAMLReportsEveryProblemAtOnce(t *testing.T) {
	const file = `agents: [a1]
power_mode: [15W]
workload:
  camras: [1, 2]
  judgement:
    statistic: p50
`
	_, err := DecodeYAML([]byte(file))
	var list api.SweepInputErrors
	if !errors.As(err, &list) {
		t.Fatalf("error %v (%T), want api.SweepInputErrors", err, err)
	}
	want := []struct {
		line, column int
		msg          string
	}{
		{2, 1, `unknown field "power_mode"`},
		{4, 3, `unknown field "camras"`},
		{6, 16, `workload.judgement.statistic: "p50", want mean, p90 or p95`},
	}
	if len(list) != len(want) {
		t.Fatalf("%d problems, want %d: %v", len(list), len(want), err)
	}
	for i, w := range want {
		if list[i].Line != w.line || list[i].Column != w.column || !strings.Contains(list[i].Error(), w.msg) {
			t.Errorf("problem %d: %s, want line %d column %d and %q", i, list[i].Located(), w.line, w.column, w.msg)
		}
		if strings.Contains(list[i].Error(), "line") {
			t.Errorf("problem %d says its position in its message: %q (the position is its Line and Column)", i, list[i].Error())
		}
	}
	if got := strings.Count(err.Error(), "line "); got != 3 {
		t.Errorf("the message names a line %d times, want once a problem: %q", got, err)
	}
	if !strings.HasPrefix(err.Error(), "sweep: line 2 column 1: ") {
		t.Errorf("message %q, want it to start with the first problem's position", err)
	}

	var many strings.Builder
	many.WriteString("workload:\n")
	for _, k := range []string{"a1", "b1", "c1", "d1", "e1", "f1", "g1"} {
		many.WriteString("  " + k + ": 1\n")
	}
	_, err = DecodeYAML([]byte(many.String()))
	if !errors.As(err, &list) || len(list) != maxSweepErrors || list[0].Line != 2 {
		t.Errorf("seven unknown fields: %v, want the first %d", err, maxSweepErrors)
	}
}

// The error answer lists every problem with its own line, column and
// field, the message without its position (the page places it), and keeps
// the first problem's at the top level for clients that read only those.
func TestErrorBodyListsEveryProblem(t *testing.T) {
	_, err := DecodeYAML([]byte("workload:\n  camras: [1]\n  search: true\n"))
	body := api.ErrorBody(err)
	probs, ok := body["errors"].([]map[string]any)
	if !ok || len(probs) != 2 {
		t.Fatalf("body %v, want two problems under errors", body)
	}
	if body["line"] != 2 || body["column"] != 3 {
		t.Errorf("body %v, want the first problem's line 2 column 3", body)
	}
	if probs[1]["line"] != 3 || probs[1]["column"] != 11 || probs[1]["field"] != "workload.search" ||
		!strings.HasPrefix(probs[1]["error"].(string), "workload.search: true, want a whole number; a search ceiling is a number") {
		t.Errorf("second problem %v", probs[1])
	}
}
