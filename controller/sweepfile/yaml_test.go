package sweepfile

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/protocol"
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
		{"syntax: where the decoder finds it", "agents: [a1\nworkload: {}\n", 2, "", "sweep: line 2 column 1: "},
		{"type", "agents: [a1]\nworkload:\n  cameras: lots\n", 3, "workload.cameras", `sweep: line 3 column 12: workload.cameras: the text "lots", want a list`},
		{"a search ceiling below the ladder", "agents: [a1]\nworkload:\n  cameras: [1, 16]\n  search: 8\n", 4, "workload.search",
			"workload.search: ceiling 8, want 16 (the highest camera level) up to 1024"},
		{"a search ceiling past the limit", "workload:\n  search: 2000\n", 2, "workload.search", "want 16 (the highest camera level) up to 1024"},
		{"a search of the multi-image family", "workload:\n  sizes: []\n  search: 64\n", 3, "workload.search", "the multi-image family measures one camera only"},
		{"search as a switch", "workload:\n  search: true\n", 2, "workload.search", "workload.search: true, want a whole number; a search ceiling is a number of cameras: write `search: 64`, not `search: true`"},
		{"a statistic that is none", "workload:\n  judgement:\n    statistic: p50\n", 3, "workload.judgement.statistic",
			`workload.judgement.statistic: "p50", want mean, p90 or p95`},
		{"a negative target", "workload:\n  judgement: {statistic: p90, target_sec: -1}\n", 2, "workload.judgement.target_sec",
			"workload.judgement.target_sec: -1, want a positive number of seconds up to 3600"},
		{"a misspelt judgement field", "workload:\n  judgement:\n    statistc: p90\n", 3, "", `unknown field "statistc"`},
	} {
		t.Run(tc.name, func(t *testing.T) { checkYAMLRefused(t, tc.yaml, tc.line, tc.field, tc.msg) })
	}
	s, err := DecodeYAML([]byte("agents: [a1]\nworkload:\n  cameras: [1, 2]\n"))
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
			_, err := DecodeYAML([]byte(yaml))
			var in *api.SweepInputError
			if !errors.As(err, &in) {
				t.Fatalf("error %v (%T), want a api.SweepInputError", err, err)
			}
			if in.Line != 5 || in.Column != 5 {
				t.Errorf("refused at line %d column %d, want line 5 column 5: %v", in.Line, in.Column, err)
			}
			// A number is checked by the workload's rule, anything else by
			// its type.
			want := "workload.frame_interval_sec[1]: "
			if strings.ContainsAny(v, `"[`) {
				want += "the text \"x\", want a number"
				if v == "[5]" {
					want = "workload.frame_interval_sec[1]: a list, want a number"
				}
			} else if !strings.Contains(err.Error(), "want a positive number of seconds up to 3600") {
				t.Errorf("error %q does not say what is allowed", err)
			}
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q, want %q", err, want)
			}
		})
	}
	s, err := DecodeYAML([]byte("agents: [a1]\nworkload:\n  frame_interval_sec: [5, 0.5]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Workload.FrameIntervalSec) != 2 || s.Workload.FrameIntervalSec[1] != 0.5 {
		t.Errorf("frame intervals %v, want [5 0.5]", s.Workload.FrameIntervalSec)
	}
}

// A sweep's search and judgement decode from YAML and from JSON alike.
func TestDecodeSweepSearchAndJudgement(t *testing.T) {
	want := protocol.Judgement{Statistic: protocol.StatisticP90, TargetSec: 2}
	fromYAML, err := DecodeYAML([]byte("workload:\n  search: 64\n  judgement: {statistic: p90, target_sec: 2}\n"))
	if err != nil {
		t.Fatal(err)
	}
	fromJSON, err := Decode([]byte(`{"workload":{"search":64,"judgement":{"statistic":"p90","target_sec":2}}}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []protocol.Sweep{fromYAML, fromJSON} {
		if s.Workload.Search != 64 || s.Workload.Judgement != want {
			t.Errorf("search %d, judgement %+v; want 64 and %+v", s.Workload.Search, s.Workload.Judgement, want)
		}
	}
	_, err = Decode([]byte(`{"workload":{"judgement":{"statistic":"median"}}}`))
	var bad *api.BadSweepError
	if !errors.As(err, &bad) || !strings.Contains(err.Error(), "workload.judgement.statistic") {
		t.Errorf("a JSON sweep's bad statistic: %v, want a api.BadSweepError naming the field", err)
	}
}

// A workload past the limits is refused from YAML and JSON alike, naming
// the field, its limit and, in YAML, its line.
func TestDecodeSweepRefusesAWorkloadPastTheLimits(t *testing.T) {
	intervals := make([]string, protocol.MaxFrameIntervals+1)
	for i := range intervals {
		intervals[i] = strconv.Itoa(i + 1)
	}
	list := "[" + strings.Join(intervals, ", ") + "]"
	_, err := DecodeYAML([]byte("agents: [a1]\nworkload:\n  sizes: [720p]\n  frame_interval_sec: " + list + "\n"))
	var in *api.SweepInputError
	if !errors.As(err, &in) || in.Field != "workload.frame_interval_sec" || in.Line != 4 ||
		in.Error() != "workload.frame_interval_sec: 17 intervals, at most 16" {
		t.Errorf("YAML: %v, at %s", err, where(in))
	}
	_, err = Decode([]byte(`{"workload":{"sizes":["720p"],"frame_interval_sec":` + list + `}}`))
	var bad *api.BadSweepError
	if !errors.As(err, &bad) || err.Error() != "workload.frame_interval_sec: 17 intervals, at most 16" {
		t.Errorf("JSON: %v", err)
	}
	cameras := make([]string, 64)
	for i := range cameras {
		cameras[i] = strconv.Itoa(i + 1)
	}
	sixteen := strings.Join(intervals[:16], ", ")
	_, err = DecodeYAML([]byte("workload:\n  sizes: [480p, 720p, 1080p, 2K]\n  cameras: [" + strings.Join(cameras, ", ") +
		"]\n  frame_interval_sec: [" + sixteen + "]\n"))
	if !errors.As(err, &in) || in.Field != "workload" || in.Line != 2 ||
		!strings.HasPrefix(in.Error(), "workload: 4360 combinations (4 sizes × 64 camera levels × (1 + 16 frame intervals) + 4 multi-image sizes × 3 image counts), at most 4096 per job") {
		t.Errorf("too many combinations: %v, at %s", err, where(in))
	}
}

// where is the field and line of a refusal, for a test's message.
func where(in *api.SweepInputError) string {
	if in == nil {
		return "no field or line"
	}
	return fmt.Sprintf("field %q line %d", in.Field, in.Line)
}

// checkYAMLRefused decodes sweep file text and wants it refused as the API
// refuses a bad sweep (a 400), at line with field and msg in its text.
func checkYAMLRefused(t *testing.T, yaml string, line int, field, msg string) {
	t.Helper()
	_, err := DecodeYAML([]byte(yaml))
	var in *api.SweepInputError
	if !errors.As(err, &in) {
		t.Fatalf("error %v (%T), want an api.SweepInputError", err, err)
	}
	var bad *api.BadSweepError
	if !errors.As(err, &bad) {
		t.Errorf("error %v is not an api.BadSweepError (the API's 400)", err)
	}
	if in.Line != line || in.Field != field || !strings.Contains(err.Error(), msg) {
		t.Errorf("got line %d field %q %q, want line %d field %q and %q", in.Line, in.Field, err, line, field, msg)
	}
}
