package protocol

import (
	"strings"
	"testing"
)

func TestValidateLabels(t *testing.T) {
	if err := ValidateLabels("labels", map[string]string{"site": "lab1", "k8s.io/zone": "a", "rack": ""}); err != nil {
		t.Fatalf("valid labels refused: %v", err)
	}
	many := map[string]string{}
	for i := range MaxLabels + 1 {
		many[strings.Repeat("k", 1+i%60)+string(rune('a'+i%26))+string(rune('a'+i/26))] = "v"
	}
	for name, tc := range map[string]struct {
		labels map[string]string
		want   string
	}{
		"space":    {map[string]string{"my site": "x"}, `agent_labels: key "my site"`},
		"empty":    {map[string]string{"": "x"}, `agent_labels: key ""`},
		"leading":  {map[string]string{"-x": "x"}, `key "-x"`},
		"long key": {map[string]string{strings.Repeat("k", 64): "x"}, "want 1-63"},
		"value":    {map[string]string{"site": strings.Repeat("v", MaxNameLen+1)}, "agent_labels.site: 257 bytes, at most 256"},
		"many":     {many, "at most 64"},
	} {
		err := ValidateLabels("agent_labels", tc.labels)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", name, err, tc.want)
		}
	}
}

func TestLabelsMatch(t *testing.T) {
	have := map[string]string{"site": "lab1", "rack": "3"}
	for _, tc := range []struct {
		want map[string]string
		ok   bool
	}{
		{nil, true},
		{map[string]string{"site": "lab1"}, true},
		{map[string]string{"site": "lab1", "rack": "3"}, true},
		{map[string]string{"site": "lab2"}, false},
		{map[string]string{"row": ""}, false},
	} {
		if got := LabelsMatch(have, tc.want); got != tc.ok {
			t.Errorf("LabelsMatch(%v, %v) = %v", have, tc.want, got)
		}
	}
}

// The control subject carries cancels and drains; each decodes as itself.
func TestDecodeControl(t *testing.T) {
	c, d, err := DecodeControl([]byte(`{"schema":1,"job_id":"j1","reason":"user"}`))
	if err != nil || c == nil || d != nil || c.JobID != "j1" {
		t.Fatalf("cancel: %+v %+v %v", c, d, err)
	}
	for _, want := range []bool{true, false} {
		data := `{"schema":1,"drained":` + map[bool]string{true: "true", false: "false"}[want] + `}`
		c, d, err = DecodeControl([]byte(data))
		if err != nil || c != nil || d == nil || d.Drained != want {
			t.Fatalf("drain %s: %+v %+v %v", data, c, d, err)
		}
	}
	if _, _, err := DecodeControl([]byte(`{"schema":99,"drained":true}`)); err == nil || !strings.Contains(err.Error(), "drain: schema 99") {
		t.Errorf("drain of a later schema: %v", err)
	}
	if _, _, err := DecodeControl([]byte(`{"schema":1}`)); err == nil || !strings.Contains(err.Error(), "job_id") {
		t.Errorf("neither: %v", err)
	}
}

// A hello's labels are validated like the configuration's.
func TestHelloLabelsValidated(t *testing.T) {
	data := `{"schema":1,"agent_id":"a1","hostname":"h","version":"v","started_at":"2026-01-01T00:00:00Z","device":{"name":"x","kind":"host","host":{}},"deployments":[],"labels":{"bad key":"x"}}`
	if _, err := DecodeAgentHello([]byte(data)); err == nil || !strings.Contains(err.Error(), `labels: key "bad key"`) {
		t.Fatalf("hello with a bad label: %v", err)
	}
}
