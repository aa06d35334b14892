package main

import (
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// Every profile flag at its default gives the default profile, from the
// camera method's workload: the prompt and the switches both share kept.
func TestProfileFlagsDefaultToTheSeedsFirstTable(t *testing.T) {
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	wf := addWorkloadFlags(fs)
	for _, name := range profileFlagNames {
		if err := fs.Set(name, fs.Lookup(name).DefValue); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	w := protocol.DefaultWorkload()
	if err := wf.apply(fs, &w); err != nil {
		t.Fatal(err)
	}
	if want := protocol.DefaultProfileWorkload(); !reflect.DeepEqual(w, want) {
		t.Errorf("got\n%+v\n%+v\nwant\n%+v\n%+v", w, *w.Profile, want, *want.Profile)
	}
	if err := w.Validate(); err != nil {
		t.Error(err)
	}
}

func TestProfileFlagsMakeAProfile(t *testing.T) {
	body := filepath.Join(t.TempDir(), "tools.json")
	if err := os.WriteFile(body, []byte(`{"tools": [{"type": "function", "function": {"name": "evaluation_markdown_bbox"}}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		args  []string
		check func(p protocol.ProfileWorkload) bool
	}{
		{"pairs by position", []string{"--isl", "1000,20000", "--osl", "1000,2000"}, func(p protocol.ProfileWorkload) bool {
			return reflect.DeepEqual(p.Lengths, []protocol.LengthPair{{ISL: 1000, OSL: 1000}, {ISL: 20000, OSL: 2000}})
		}},
		{"one OSL for all", []string{"--osl", "2000", "--isl", "1000,20000,60000"}, func(p protocol.ProfileWorkload) bool {
			return reflect.DeepEqual(p.Lengths, []protocol.LengthPair{{ISL: 1000, OSL: 2000}, {ISL: 20000, OSL: 2000}, {ISL: 60000, OSL: 2000}})
		}},
		{"one ISL for all, repeated", []string{"--isl", "0", "--osl", "200,400"}, func(p protocol.ProfileWorkload) bool {
			return reflect.DeepEqual(p.Lengths, []protocol.LengthPair{{ISL: 0, OSL: 200}, {ISL: 0, OSL: 400}})
		}},
		{"only --osl: the default ISL", []string{"--osl", "32"}, func(p protocol.ProfileWorkload) bool {
			return reflect.DeepEqual(p.Lengths, []protocol.LengthPair{{ISL: 1000, OSL: 32}}) && p.Auto()
		}},
		{"levels", []string{"--concurrency", "1, 2,4"}, func(p protocol.ProfileWorkload) bool {
			return reflect.DeepEqual(p.Concurrency, []int{1, 2, 4}) && p.AutoCeiling == 0
		}},
		{"auto with a ceiling", []string{"--concurrency", "auto", "--auto-ceiling", "64"}, func(p protocol.ProfileWorkload) bool {
			return p.Auto() && p.AutoCeiling == 64
		}},
		{"the rest", []string{"--image-size", "1120x1120,1648X2048", "--image-format", "JPG", "--no-stream", "--profile-requests", "100",
			"--profile-images", "2", "--warmup", "3", "--extra-body", "@" + body}, func(p protocol.ProfileWorkload) bool {
			var tools map[string]any
			return reflect.DeepEqual(p.Resolutions, []protocol.Resolution{{Width: 1120, Height: 1120}, {Width: 1648, Height: 2048}}) &&
				p.ImageFormat == protocol.ImageFormatJPEG && p.NoStream && p.RequestsPerLevel == 100 && p.ImagesPerRequest == 2 &&
				p.WarmupRequests == 3 && json.Unmarshal(p.ExtraBody, &tools) == nil && tools["tools"] != nil
		}},
		{"inline extra body", []string{"--extra-body", `{"temperature": 0}`}, func(p protocol.ProfileWorkload) bool {
			return string(p.ExtraBody) == `{"temperature": 0}`
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := protocol.DefaultWorkload()
			base.Prompt = "Read the page."
			w, err := applyFlags(t, base, tc.args...)
			if err != nil {
				t.Fatal(err)
			}
			if w.Profile == nil || !tc.check(*w.Profile) {
				t.Fatalf("profile %+v", w.Profile)
			}
			if w.Prompt != "Read the page." || len(w.Sizes) != 0 || len(w.Cameras) != 0 || w.MaxTokens != 0 {
				t.Errorf("the camera ladders' fields stay, or the prompt is lost: %+v", w)
			}
			if err := w.Validate(); err != nil {
				t.Error(err)
			}
		})
	}
}

// Bad profile input is refused before anything is sent, naming the flag.
func TestProfileFlagErrorsNameTheFlag(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--isl", "1000,20000", "--osl", "1,2,3"}, "--isl has 2 lengths and --osl 3: they pair by position"},
		{[]string{"--osl", "0"}, `--osl: "0" is not a whole number of tokens in 1..10000000`},
		{[]string{"--isl", "-1"}, `--isl: "-1" is not a whole number of tokens in 0..10000000`},
		{[]string{"--isl", "lots"}, `--isl: "lots" is not a whole number of tokens`},
		{[]string{"--isl", ","}, "--isl: at least one length is needed"},
		{[]string{"--image-size", "1120"}, `--image-size: image size "1120": want WIDTHxHEIGHT in pixels, e.g. 1120x1120`},
		{[]string{"--image-size", "9000x10"}, `--image-size: image size "9000x10": 9000x10: each side must be 1..8192 pixels`},
		{[]string{"--image-size", "10x10,10x10"}, "--image-size: 10x10 is listed twice"},
		{[]string{"--image-format", "webp"}, `--image-format "webp": want png or jpeg`},
		{[]string{"--profile-images", "65"}, "--profile-images 65: want at most 64"},
		{[]string{"--concurrency", "0"}, `--concurrency: "0" is not a whole number in 1..1024, or auto`},
		{[]string{"--concurrency", "1,1"}, "--concurrency: 1 is listed twice, or auto"},
		{[]string{"--auto-ceiling", "0"}, "--auto-ceiling 0: want 1 or more"},
		{[]string{"--concurrency", "1,2", "--auto-ceiling", "8"}, "--auto-ceiling is the ceiling of --concurrency auto; --concurrency 1,2 lists the levels"},
		{[]string{"--extra-body", "[1]"}, "--extra-body: want a JSON object"},
		{[]string{"--extra-body", `{"stream": false}`}, `--extra-body: sets "stream", which vlmfleet sets itself`},
		{[]string{"--extra-body", "@/nonexistent/body.json"}, "--extra-body: open /nonexistent/body.json"},
		{[]string{"--profile-requests", "-1"}, "--profile-requests -1: want 0 or more"},
		{[]string{"--isl", "1000", "--cameras", "1,2"}, "--cameras sets the camera ladders, which a profile (--isl, --osl, --concurrency, ... or a sweep file's workload.profile) does not measure; --concurrency is the profile's"},
		{[]string{"--no-stream", "--max-tokens", "64"}, "--max-tokens sets the camera ladders, which a profile"},
		{[]string{"--concurrency", "auto", "--search"}, "--search sets the camera ladders, which a profile"},
		{[]string{"--osl", "8", "--frame-interval", "5"}, "--frame-interval sets the camera ladders, which a profile (--isl, --osl, --concurrency, ... or a sweep file's workload.profile) does not measure"},
	} {
		_, err := applyFlags(t, protocol.DefaultWorkload(), c.args...)
		var ue usageError
		if !errors.As(err, &ue) || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%q: %v; want the usage error %q", c.args, err, c.want)
		}
	}
	// A sweep file's profile takes the profile's flags and refuses the
	// camera ladders' alone.
	base := protocol.DefaultProfileWorkload()
	base.Profile.Lengths = []protocol.LengthPair{{ISL: 1000, OSL: 200}, {ISL: 1000, OSL: 400}}
	if _, err := applyFlags(t, base, "--requests", "5"); err == nil || !strings.HasPrefix(err.Error(), "--requests sets the camera ladders") {
		t.Errorf("--requests on a file's profile: %v", err)
	}
	w, err := applyFlags(t, base, "--isl", "500")
	if err != nil || !reflect.DeepEqual(w.Profile.Lengths, []protocol.LengthPair{{ISL: 500, OSL: 200}, {ISL: 500, OSL: 400}}) {
		t.Errorf("--isl on a file's two OSLs: %v %+v", err, w.Profile)
	}
}

// A validation error of a profile names the flag that sets the field.
func TestPointAtFlagNamesTheProfilesFlags(t *testing.T) {
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	addWorkloadFlags(fs)
	_ = fs.Parse([]string{"--osl", "5"})
	err := pointAtFlag(fs, errors.New("workload.profile.lengths[1].osl: 0, want 1..10"))
	if err.Error() != "--osl: workload.profile.lengths[1].osl: 0, want 1..10" {
		t.Errorf("given: %v", err)
	}
	err = pointAtFlag(fs, errors.New("workload.profile.resolutions[0]: 1x1 is listed twice"))
	if err.Error() != "workload.profile.resolutions[0]: 1x1 is listed twice (--image-size sets it)" {
		t.Errorf("not given: %v", err)
	}
}

// bench refuses a bad profile with exit 2 before it sends a request.
func TestBenchRefusesABadProfileBeforeSending(t *testing.T) {
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		http.Error(w, "not expected", http.StatusTeapot)
	}))
	t.Cleanup(srv.Close)
	for want, args := range map[string][]string{
		"--isl has 2 lengths and --osl 3":                    {"--isl", "1000,20000", "--osl", "1,2,3"},
		`--image-size: image size "big"`:                     {"--image-size", "big"},
		"--auto-ceiling 0: want 1 or more":                   {"--concurrency", "auto", "--auto-ceiling", "0"},
		`--extra-body: sets "messages"`:                      {"--extra-body", `{"messages": []}`},
		"--extra-body: want a JSON object":                   {"--extra-body", `"tools"`},
		"--cameras sets the camera ladders":                  {"--osl", "200", "--cameras", "1,2"},
		"lengths[1]: ISL 1000 / OSL 200 is listed twice":     {"--isl", "1000,1000", "--osl", "200"},
		"--profile-requests 100001: want at most 100000":     {"--no-stream", "--profile-requests", "100001"},
		`--concurrency: "many" is not a whole number in 1..`: {"--concurrency", "many"},
	} {
		code, _, errOut := runCLI(t, append([]string{"bench", "--url", srv.URL + "/v1", "--model", "m"}, args...)...)
		if code != 2 || !strings.Contains(errOut, want) {
			t.Errorf("%q: exit %d, stderr %q; want 2 and %q", args, code, errOut, want)
		}
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("%d requests reached the endpoint", n)
	}
}

// sweep takes the same profile flags, checked before the controller is asked.
func TestSweepRefusesABadProfileBeforeSubmitting(t *testing.T) {
	code, _, errOut := runCLI(t, "sweep", "--controller", "http://127.0.0.1:1", "--isl", "1000", "--osl", "0")
	if want := `--osl: "0" is not a whole number of tokens in 1..`; code != 2 || !strings.Contains(errOut, want) {
		t.Errorf("exit %d, stderr %q; want 2 and %q", code, errOut, want)
	}
}
