package main

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// applyFlags parses args with the workload flags and applies them to base.
func applyFlags(t *testing.T, base protocol.Workload, args ...string) (protocol.Workload, error) {
	t.Helper()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	wf := addWorkloadFlags(fs)
	if err := fs.Parse(args); err != nil {
		return base, err
	}
	err := wf.apply(fs, &base)
	return base, err
}

func TestWorkloadFlagsDefaultToTheMethod(t *testing.T) {
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	var help bytes.Buffer
	fs.SetOutput(&help)
	wf := addWorkloadFlags(fs)
	fs.PrintDefaults()
	for _, want := range []string{`(default "480p,720p,1080p")`, `(default "1,2,4,8,16")`, `(default "480p,720p,1080p,2K")`,
		`(default "1,3,5")`, "(default 8)", "(default 5)", "(default 128)", "(default 5m0s)", `(default "false")`, "or unset (the default", `(default "Describe the scene.")`} {
		if !strings.Contains(help.String(), want) {
			t.Errorf("-h does not show %s:\n%s", want, help.String())
		}
	}
	// Parsing the defaults' text gives the method back. The profile's
	// flags are left out: any of them makes the workload a profile
	// (TestProfileFlagsDefaultToTheSeedsFirstTable).
	w := protocol.Workload{}
	fs.VisitAll(func(f *flag.Flag) {
		if !slices.Contains(profileFlagNames, f.Name) {
			_ = fs.Set(f.Name, f.DefValue)
		}
	})
	if err := wf.apply(fs, &w); err != nil {
		t.Fatal(err)
	}
	want := protocol.DefaultWorkload()
	want.ImageSet = ""
	if !reflect.DeepEqual(w, want) {
		t.Errorf("defaults as flags:\n%+v\nwant\n%+v", w, want)
	}
}

// Only the flags given change the workload: a sweep file's values stay.
func TestWorkloadFlagsOverrideOnlyWhatIsGiven(t *testing.T) {
	base := protocol.DefaultWorkload()
	base.Sizes, base.RequestsPerLevel, base.ImageSet = []string{"2K"}, 3, "snapshots"
	w, err := applyFlags(t, base, "--cameras", "1, 4", "--multi-sizes", "none", "--timeout", "0", "--cache-prompt", "unset",
		"--unique-images", "--prompt", "Count the cars.", "--max-tokens", "64", "--warmup", "0", "--frame-interval", "5, 0.5")
	if err != nil {
		t.Fatal(err)
	}
	want := base
	want.Cameras, want.MultiImageSizes, want.ImagesPerRequest = []int{1, 4}, nil, nil
	want.FrameIntervalSec = []float64{5, 0.5}
	want.RequestTimeoutSec, want.CachePrompt, want.UniqueImages = 0, nil, protocol.Set(true)
	want.Prompt, want.MaxTokens, want.WarmupRequests = "Count the cars.", 64, 0
	if !reflect.DeepEqual(w, want) {
		t.Errorf("got\n%+v\nwant\n%+v", w, want)
	}
	// --images after --multi-sizes none is kept, whatever the order given.
	w, err = applyFlags(t, base, "--images", "2", "--multi-sizes", "2k", "--multi-requests", "9", "--requests", "4", "--sizes", "480p", "--cache-prompt", "true")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(w.ImagesPerRequest, []int{2}) || !reflect.DeepEqual(w.MultiImageSizes, []string{"2K"}) || w.MultiImageRequests != 9 ||
		w.RequestsPerLevel != 4 || !reflect.DeepEqual(w.Sizes, []string{"480p"}) || w.CachePrompt == nil || !*w.CachePrompt {
		t.Errorf("got %+v", w)
	}
}

func TestWorkloadFlagErrorsNameTheFlag(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--requests", "0"}, "--requests 0: want 1 or more"},
		{[]string{"--requests", "100001"}, "--requests 100001: want at most 100000"},
		{[]string{"--multi-requests", "0"}, "--multi-requests 0: want 1 or more"},
		{[]string{"--warmup", "-1"}, "--warmup -1: want 0 or more"},
		{[]string{"--warmup", "101"}, "--warmup 101: want at most 100"},
		{[]string{"--max-tokens", "0"}, "--max-tokens 0: want 1 or more"},
		{[]string{"--cameras", "0"}, `--cameras: "0" is not a whole number in 1..1024`},
		{[]string{"--cameras", "2,2"}, "--cameras: 2 is listed twice"},
		{[]string{"--cameras", " , "}, "--cameras: at least one number is needed"},
		{[]string{"--images", "65"}, `--images: "65" is not a whole number in 1..64`},
		{[]string{"--sizes", "4K"}, `--sizes: image size "4K": want one of 480p, 720p, 1080p, 2K`},
		{[]string{"--sizes", "720p,720P"}, "--sizes: 720p is listed twice"},
		{[]string{"--multi-sizes", ""}, "--multi-sizes: at least one size is needed (480p, 720p, 1080p, 2K)"},
		{[]string{"--prompt", " "}, "--prompt: must not be empty"},
		{[]string{"--timeout", "-1s"}, "--timeout -1s: want 0 (no bound) or more"},
		{[]string{"--cache-prompt", "yes"}, `--cache-prompt "yes": want true, false or unset`},
		{[]string{"--frame-interval", "0"}, `--frame-interval: "0" is not a number of seconds above 0 and up to 3600`},
		{[]string{"--frame-interval", "5,-1"}, `--frame-interval: "-1" is not a number of seconds above 0 and up to 3600`},
		{[]string{"--frame-interval", "NaN"}, `--frame-interval: "NaN" is not a number of seconds above 0 and up to 3600`},
		{[]string{"--frame-interval", "inf"}, `--frame-interval: "inf" is not a number of seconds above 0 and up to 3600`},
		{[]string{"--frame-interval", "5s"}, `--frame-interval: "5s" is not a number of seconds above 0 and up to 3600`},
		{[]string{"--frame-interval", "3601"}, `--frame-interval: "3601" is not a number of seconds above 0 and up to 3600`},
		{[]string{"--frame-interval", "5,5.0"}, "--frame-interval: 5 s is listed twice"},
	} {
		_, err := applyFlags(t, protocol.DefaultWorkload(), c.args...)
		var ue usageError
		if !errors.As(err, &ue) || err.Error() != c.want {
			t.Errorf("%q: %v; want the usage error %q", c.args, err, c.want)
		}
	}
}

// --search alone asks for the default ceiling and --search=N for N; the
// statistic and the target set the judgement, the published one kept as
// the zero judgement.
func TestWorkloadFlagsSearchAndJudgement(t *testing.T) {
	for _, c := range []struct {
		args   []string
		search int
		j      protocol.Judgement
	}{
		{[]string{"--search"}, protocol.DefaultSearchCeiling, protocol.Judgement{}},
		{[]string{"--search=40", "--statistic", "P90", "--target", "2.5"}, 40, protocol.Judgement{Statistic: protocol.StatisticP90, TargetSec: 2.5}},
		{[]string{"--search=false", "--statistic", "mean", "--target", "3"}, 0, protocol.Judgement{}},
		{[]string{"--search=0", "--statistic", "p95"}, 0, protocol.Judgement{Statistic: protocol.StatisticP95}},
	} {
		w, err := applyFlags(t, protocol.DefaultWorkload(), c.args...)
		if err != nil {
			t.Errorf("%q: %v", c.args, err)
			continue
		}
		if w.Search != c.search || w.Judgement != c.j {
			t.Errorf("%q: search %d, judgement %+v; want %d and %+v", c.args, w.Search, w.Judgement, c.search, c.j)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--search=lots"}, `--search="lots": want --search alone (a ceiling of 64 cameras) or --search=N, N up to 1024 (0: no search)`},
		{[]string{"--search=-1"}, `--search="-1": want --search alone`},
		{[]string{"--search=1025"}, `--search="1025": want --search alone`},
		{[]string{"--statistic", "p50"}, `--statistic: statistic "p50": want mean, p90 or p95`},
		{[]string{"--target", "0"}, "--target 0: want a positive number of seconds up to 3600"},
		{[]string{"--target", "NaN"}, "--target NaN: want a positive number of seconds up to 3600"},
	} {
		_, err := applyFlags(t, protocol.DefaultWorkload(), c.args...)
		var ue usageError
		if !errors.As(err, &ue) || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%q: %v; want the usage error %q", c.args, err, c.want)
		}
	}
}
