package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/vlmfleet/vlmfleet/explorer"
	"github.com/vlmfleet/vlmfleet/explorer/profiles"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// measuredRuns is a controller's store with one measured profile line.
type measuredRuns struct {
	runSlice
	lines []protocol.ProfileRow
}

func (m measuredRuns) ProfileRows(context.Context) ([]protocol.ProfileRow, error) {
	return m.lines, nil
}

func TestExplorerProfilesPublished(t *testing.T) {
	code, out, errOut := cliRun(t, nil, "explorer", "profiles", "--published", "--model", "nemoretriever", "--gpu", "l40s")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"nemoretriever-parse\n  L40S\n    BF16\n      TP1\n\n        Min Latency (concurrency 1)\n",
		"        OSL   Image Size (width x height in px)  Avg Request Latency (msec)  Source\n" +
			"        200   1648x2048                          710                         published (NVIDIA NIM, genai-perf)\n",
		"        3579  1648x2048                          0.70                           published (NVIDIA NIM, genai-perf)\n",
		"\n8 lines: 8 published, 0 measured.",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "H100") || strings.Contains(out, "Llama") {
		t.Errorf("lines the filters leave out:\n%s", out)
	}
}

// From a controller: its measured line under the published one, and
// --json as the endpoint answers.
func TestExplorerProfilesFromController(t *testing.T) {
	published, err := profiles.Published()
	if err != nil {
		t.Fatal(err)
	}
	m := published[0] // Llama-3.2-11B on H100-HBM3-80GB, FP8, TP1, min latency: 7598 ms
	lat := 6838.2
	m.Source, m.Note, m.Engine, m.RequestLatencyMs = protocol.ProfileSourceMeasured, "", "vLLM", &lat
	srv := httptest.NewServer(explorer.NewHandler(measuredRuns{lines: []protocol.ProfileRow{m}}, zerolog.New(io.Discard)))
	defer srv.Close()
	env := map[string]string{"VLMFLEET_CONTROLLER": srv.URL}
	code, out, errOut := cliRun(t, env, "explorer", "profiles", "--precision", "FP8", "--tp", "1", "--profile", "min_latency")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "7598                        published (NVIDIA NIM, genai-perf)\n") ||
		!strings.Contains(out, "6838                        measured  -10.0 % latency\n") || !strings.Contains(out, "2 lines: 1 published, 1 measured.") {
		t.Errorf("the measured line beside the published one:\n%s", out)
	}
	code, out, errOut = cliRun(t, env, "explorer", "profiles", "--json", "--model", "11b")
	if code != 0 {
		t.Fatalf("--json: exit %d: %s", code, errOut)
	}
	var res protocol.ProfileRows
	if err := json.Unmarshal([]byte(out), &res); err != nil || len(res.Rows) != 21 || res.Rows[1].Source != protocol.ProfileSourceMeasured {
		t.Errorf("--json: %v, %d rows; want the 20 published lines of Llama-3.2-11B and the measured one second", err, len(res.Rows))
	}
}

func TestExplorerProfilesUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--published", "--profile", "best"}, `--profile: "best", want min_latency or max_throughput`},
		{[]string{"--published", "--tp", "0"}, "--tp: "},
		{[]string{"--published", "--model", ""}, "--model: empty"},
		{[]string{"--published", "--controller", "http://127.0.0.1:1"}, "not both"},
		{[]string{"--published", "90b"}, `unexpected argument "90b"`},
	} {
		code, _, errOut := cliRun(t, nil, append([]string{"explorer", "profiles"}, c.args...)...)
		if code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, %q; want 2 and %q", c.args, code, errOut, c.want)
		}
	}
}
