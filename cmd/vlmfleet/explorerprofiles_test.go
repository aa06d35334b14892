package main

import (
	"encoding/json"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/vlmfleet/vlmfleet/explorer"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// measuredRun is a completed run of Llama-3.2-11B on an H100 at FP8, TP1
// whose one level, at concurrency 1 with ISL 1000 and OSL 1000 on a
// 1120x1120 png, answered in latencyMs.
func measuredRun(latencyMs float64) protocol.Run {
	size := protocol.Resolution{Width: 1120, Height: 1120}
	ttft, itl := 190.0, (latencyMs-190)/999
	return protocol.Run{
		ID: "r-1", Status: protocol.RunCompleted, CreatedAt: time.Now(),
		Config: protocol.Configuration{Model: "Llama-3.2-11B-Vision-Instruct", Quantization: "FP8", Engine: "vLLM",
			GPU: "H100-HBM3-80GB", GPUCount: 1, TP: 1},
		Combinations: []protocol.Combination{{
			ComboKey: protocol.ComboKey{Size: size.String(), Images: 1, Cameras: 1, ISL: 1000, OSL: 1000},
			Width:    1120, Height: 1120, Completed: 8,
			Profile: &protocol.ProfileLevel{
				LengthPair: protocol.LengthPair{ISL: 1000, OSL: 1000}, Resolution: size, ImageFormat: protocol.ImageFormatPNG,
				Concurrency: 1, Stream: true, TTFTMs: &ttft, ITLMs: &itl, RequestLatencyMs: latencyMs,
				RequestThroughput: 1000 / latencyMs, OutputTokensPerSec: 1e6 / latencyMs, OSLHeld: true, OSLMean: 1000,
			},
		}},
	}
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
		protocol.ProfileAutoRule, "ISL = text tokens; the image's tokens are not counted.",
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
	// The published line: 7598 ms.
	srv := httptest.NewServer(explorer.NewHandler(runSlice{measuredRun(6838.2)}, zerolog.New(io.Discard)))
	defer srv.Close()
	env := map[string]string{"VLMFLEET_CONTROLLER": srv.URL}
	code, out, errOut := cliRun(t, env, "explorer", "profiles", "--precision", "FP8", "--tp", "1", "--profile", "min_latency")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "7598                        -                              -                  published (NVIDIA NIM, genai-perf)\n") ||
		!strings.Contains(out, "6838                        0.15                           146.2              measured (run r-1)  -10.0 % latency\n") || !strings.Contains(out, "2 lines: 1 published, 1 measured.") {
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
		{[]string{"--published", "--source", "nim"}, `--source: "nim", want published or measured`},
	} {
		code, _, errOut := cliRun(t, nil, append([]string{"explorer", "profiles"}, c.args...)...)
		if code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, %q; want 2 and %q", c.args, code, errOut, c.want)
		}
	}
}
