package sweepfile

import (
	"errors"
	"strings"
	"testing"

	"github.com/vlmfleet/vlmfleet/controller/api"
)

func TestDecodeSweepErrorsNameTheField(t *testing.T) {
	for body, want := range map[string]string{
		`{"workload":{"max_tokens":0}}`:           "workload.max_tokens",
		`{"workload":{"sizes":["4K"]}}`:           `workload.sizes[0]: image size "4K"`,
		"{\n \"agents\": [\"bad id!\"]}":          "agents[0]",
		"{\n \"workload\": {\"cameras\": \"x\"}}": "line 2 column",
		`{"deployments":[""]}`:                    "deployments[0]",
		``:                                        "empty; want a JSON document",
		`{} {}`:                                   "trailing data",
	} {
		_, err := Decode([]byte(body))
		var bad *api.BadSweepError
		if err == nil || !errors.As(err, &bad) || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want a api.BadSweepError containing %q", body, err, want)
		}
	}
	s, err := Decode([]byte(`{"name":"n","workload":{"cameras":[1,2]}}`))
	if err != nil || s.Workload.MaxTokens != 128 || len(s.Workload.Cameras) != 2 {
		t.Errorf("defaults: %+v %v", s.Workload, err)
	}
}

func FuzzDecodeSweep(f *testing.F) {
	f.Add([]byte(`{"agents":["a1"],"deployments":["d"],"workload":{"sizes":["720p"],"cameras":[1,2,4]}}`))
	f.Add([]byte(`{"workload":{"images_per_request":[1,3,5],"multi_image_sizes":["2K"]}}`))
	f.Add([]byte(`{"workload":{"cameras":[-1]}}`))
	f.Add([]byte(`[1,2,3]`))
	f.Add([]byte(`{"workload":null}`))
	f.Add([]byte(`{"workload":{"profile":{"lengths":[{"isl":1000,"osl":200}],"resolutions":[{"width":8,"height":8}],"concurrency":[1,2],"auto_ceiling":0,"extra_body":{"tools":[]}}}}`))
	f.Add([]byte(`{"workload":{"profile":{},"cameras":[1]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Decode(data)
		if err != nil {
			return
		}
		if err := Check(s); err != nil {
			t.Fatalf("decoded sweep fails validation: %v", err)
		}
		_ = s.Workload.Plan()
	})
}
