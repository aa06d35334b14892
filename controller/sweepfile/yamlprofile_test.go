package sweepfile

import (
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/vlmfleet/vlmfleet/protocol"
)

const sweepYAMLProfile = `name: llama 11b, the page's first tables
deployments: [llama-3.2-11b-vision-fp8]
workload:
  prompt: Describe the image.
  profile:
    isl: [1000, 20000]
    osl: [1000, 2000]
    image_size: [1120x1120, 1648X2048]
    image_format: jpeg
    images_per_request: 1
    concurrency: auto
    auto_ceiling: 64
    no_stream: true
    extra_body:
      tools:
        - type: function
          function: {name: evaluation_markdown_bbox}
    requests_per_level: 20
    warmup_requests: 2
`

func TestDecodeSweepYAMLProfile(t *testing.T) {
	s, err := DecodeYAML([]byte(sweepYAMLProfile))
	if err != nil {
		t.Fatal(err)
	}
	w := s.Workload
	if w.Prompt != "Describe the image." || len(w.Sizes) != 0 || len(w.Cameras) != 0 || w.MaxTokens != 0 || w.RequestTimeoutSec != 300 {
		t.Errorf("workload around the profile: %+v", w)
	}
	p := w.Profile
	want := protocol.ProfileWorkload{
		Lengths:     []protocol.LengthPair{{ISL: 1000, OSL: 1000}, {ISL: 20000, OSL: 2000}},
		Resolutions: []protocol.Resolution{{Width: 1120, Height: 1120}, {Width: 1648, Height: 2048}},
		ImageFormat: protocol.ImageFormatJPEG, ImagesPerRequest: 1, AutoCeiling: 64, NoStream: true,
		RequestsPerLevel: 20, WarmupRequests: 2,
		ExtraBody: json.RawMessage(`{"tools":[{"function":{"name":"evaluation_markdown_bbox"},"type":"function"}]}`),
	}
	if p == nil || !reflect.DeepEqual(*p, want) {
		t.Fatalf("profile\n%+v\nwant\n%+v", p, want)
	}
}

// Fields left out take the default profile's; one OSL stands for every
// ISL, and a list of levels replaces the automatic rule.
func TestDecodeSweepYAMLProfileDefaults(t *testing.T) {
	s, err := DecodeYAML([]byte("workload:\n  profile:\n    isl: [1000, 20000, 60000]\n    osl: [2000]\n    concurrency: [1, 2, 4]\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := protocol.DefaultProfile()
	want.Lengths = []protocol.LengthPair{{ISL: 1000, OSL: 2000}, {ISL: 20000, OSL: 2000}, {ISL: 60000, OSL: 2000}}
	want.Concurrency, want.AutoCeiling = []int{1, 2, 4}, 0
	if !reflect.DeepEqual(*s.Workload.Profile, want) {
		t.Errorf("profile\n%+v\nwant\n%+v", *s.Workload.Profile, want)
	}
	s, err = DecodeYAML([]byte("workload:\n  profile: {}\n"))
	if err != nil || !reflect.DeepEqual(*s.Workload.Profile, protocol.DefaultProfile()) {
		t.Errorf("an empty profile: %v %+v, want the default", err, s.Workload.Profile)
	}
	// JSON, as the API takes it, fills the profile's defaults alike.
	s, err = Decode([]byte(`{"workload": {"profile": {"lengths": [{"isl": 0, "osl": 200}], "concurrency": [1], "auto_ceiling": 0}}}`))
	if err != nil || s.Workload.Profile.ImageFormat != protocol.ImageFormatPNG || len(s.Workload.Sizes) != 0 ||
		!reflect.DeepEqual(s.Workload.Profile.Lengths, []protocol.LengthPair{{ISL: 0, OSL: 200}}) {
		t.Errorf("JSON: %v %+v", err, s.Workload)
	}
}

func TestDecodeSweepYAMLProfileErrors(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		line       int
		field      string
		msg        string
	}{
		{"lengths that do not pair", "workload:\n  profile:\n    isl: [1000, 20000]\n    osl: [1, 2, 3]\n", 4, "workload.profile.osl",
			"workload.profile.osl: 3 lengths, and isl 2: they pair by position"},
		{"an OSL of 0", "workload:\n  profile:\n    isl: [1000, 20000]\n    osl: [1000,\n      0]\n", 5, "workload.profile.osl[1]",
			"workload.profile.osl[1]: 0, want 1..10000000"},
		{"one OSL for all, 0", "workload:\n  profile:\n    isl: [1000, 20000]\n    osl: [0]\n", 4, "workload.profile.osl[0]",
			"workload.profile.osl[0]: 0, want 1.."},
		{"a negative ISL", "workload:\n  profile:\n    isl: [-5]\n", 3, "workload.profile.isl[0]",
			"workload.profile.isl[0]: -5, want 0 (the prompt as written) up to"},
		{"a pair twice", "workload:\n  profile:\n    isl: [1000, 1000]\n    osl: [200]\n", 3, "workload.profile.isl[1]",
			"ISL 1000 / OSL 200 is listed twice"},
		{"a size that is not WxH", "workload:\n  profile:\n    image_size: [1120x1120, big]\n", 3, "workload.profile.image_size[1]",
			`workload.profile.image_size[1]: image size "big": want WIDTHxHEIGHT in pixels`},
		{"a size too large", "workload:\n  profile:\n    image_size:\n      - 1120x1120\n      - 9000x9000\n", 5, "workload.profile.image_size[1]",
			"each side must be 1..8192 pixels"},
		{"a size twice", "workload:\n  profile:\n    image_size: [8x8, 8x8]\n", 3, "workload.profile.image_size[1]", "8x8 is listed twice"},
		{"a size not a list", "workload:\n  profile:\n    image_size: 1120x1120\n", 3, "workload.profile.image_size",
			"want a list ([a, b] or one \"- \" item a line); image_size is a list of WxH sizes: `image_size: [1120x1120]`"},
		{"a format", "workload:\n  profile:\n    image_format: webp\n", 3, "workload.profile.image_format", `"webp", want png or jpeg`},
		{"concurrency a word", "workload:\n  profile:\n    concurrency: many\n", 3, "workload.profile.concurrency",
			"workload.profile.concurrency: the text \"many\", want a list of levels or auto"},
		{"concurrency a mapping", "workload:\n  profile:\n    concurrency: {auto: true}\n", 3, "workload.profile.concurrency", "want a list of levels or auto"},
		{"a level a word", "workload:\n  profile:\n    concurrency: [1, two]\n", 3, "workload.profile.concurrency[1]", "want a whole number"},
		{"a level 0", "workload:\n  profile:\n    concurrency: [1, 0]\n", 3, "workload.profile.concurrency[1]", "workload.profile.concurrency[1]: 0, want 1..1024"},
		{"a level twice", "workload:\n  profile:\n    concurrency: [2, 2]\n", 3, "workload.profile.concurrency[1]", "level 2 is listed twice"},
		{"auto with a ceiling of 0", "workload:\n  profile:\n    concurrency: auto\n    auto_ceiling: 0\n", 4, "workload.profile.auto_ceiling",
			"workload.profile.auto_ceiling: 0, want 1..1024"},
		{"a ceiling beside levels", "workload:\n  profile:\n    concurrency: [1, 2]\n    auto_ceiling: 8\n", 4, "workload.profile.auto_ceiling",
			"but workload.profile.concurrency lists the levels"},
		{"extra body not a mapping", "workload:\n  profile:\n    extra_body: [tools]\n", 3, "workload.profile.extra_body", "want a mapping"},
		{"extra body sets an owned field", "workload:\n  profile:\n    extra_body:\n      tools: []\n      max_tokens: 9\n", 4, "workload.profile.extra_body",
			`workload.profile.extra_body: sets "max_tokens", which vlmfleet sets itself`},
		{"stream: false", "workload:\n  profile:\n    stream: false\n", 3, "", `unknown field "stream" in workload.profile; did you mean "no_stream"?`},
		{"a misspelt field", "workload:\n  profile:\n    image_sizes: [8x8]\n", 3, "", `unknown field "image_sizes" in workload.profile; did you mean "image_size"?`},
		{"requests", "workload:\n  profile:\n    requests_per_level: -1\n", 3, "workload.profile.requests_per_level", "want 1..100000, or 0 for max(10, 2 × concurrency)"},
		{"warm-up", "workload:\n  profile:\n    warmup_requests: 1000\n", 3, "workload.profile.warmup_requests", "want 0..100"},
		{"an empty isl", "workload:\n  profile:\n    isl: []\n", 3, "workload.profile.isl",
			"workload.profile.isl: an empty list; list at least one, or leave isl out for the default"},
		{"an empty concurrency", "workload:\n  profile:\n    concurrency: []\n", 3, "workload.profile.concurrency", "workload.profile.concurrency: an empty list"},
		{"an empty image_size", "workload:\n  profile:\n    image_size: []\n", 3, "workload.profile.image_size",
			"workload.profile.image_size: at least one image size (WxH) is needed"},
		{"extra body with NaN", "workload:\n  profile:\n    extra_body: {t: .nan}\n", 3, "workload.profile.extra_body",
			"want a mapping of names to values JSON can hold"},
		{"cameras beside a profile", "workload:\n  cameras: [1, 2]\n  profile:\n    osl: [8]\n", 2, "workload.cameras",
			"workload.cameras: a profile workload (workload.profile) does not measure the camera ladders; leave cameras out"},
		{"a search beside a profile", "workload:\n  profile: {osl: [8]}\n  search: 64\n", 3, "workload.search", "workload.search: a profile workload"},
	} {
		t.Run(tc.name, func(t *testing.T) { checkYAMLRefused(t, tc.yaml, tc.line, tc.field, tc.msg) })
	}
}

// The profile example of docs/sweeps.md decodes to what its comments say.
func TestDocsSweepYAMLProfileExampleDecodes(t *testing.T) {
	doc, err := os.ReadFile("../../docs/sweeps.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "## A latency and throughput profile (`profile`)")
	_, block, ok2 := strings.Cut(section, "```yaml\n")
	block, _, ok3 := strings.Cut(block, "```")
	if !ok || !ok2 || !ok3 {
		t.Fatal("docs/sweeps.md has no yaml block under its profile section")
	}
	s, err := DecodeYAML([]byte(block))
	if err != nil {
		t.Fatal(err)
	}
	p := s.Workload.Profile
	if len(p.Lengths) != 2 || p.Lengths[1] != (protocol.LengthPair{ISL: 20000, OSL: 2000}) || !p.Auto() || p.AutoCeiling != 256 ||
		p.LevelRequests(8) != 16 || len(p.ExtraBody) == 0 {
		t.Errorf("the example decodes to %+v", p)
	}
}
