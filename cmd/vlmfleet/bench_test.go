package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/vlmfleet/vlmfleet/agent/simengine"
	"github.com/vlmfleet/vlmfleet/harness/simtest"
	"github.com/vlmfleet/vlmfleet/internal/testutil"
	"github.com/vlmfleet/vlmfleet/internal/testutil/fakellama"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// benchFakeEngine streams a vLLM-like answer and counts the images it got.
func benchFakeEngine(t *testing.T) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var images atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model    string `json:"model"`
			Messages []struct {
				Content []struct {
					Type     string `json:"type"`
					ImageURL struct {
						URL string `json:"url"`
					} `json:"image_url"`
				} `json:"content"`
			} `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Model != "fake-vlm" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		for _, c := range req.Messages[0].Content {
			if c.Type == "image_url" && strings.HasPrefix(c.ImageURL.URL, "data:image/jpeg;base64,") {
				images.Add(1)
			}
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		for _, ev := range []string{
			`{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}`,
			`{"choices":[{"index":0,"delta":{"content":"A"}}]}`,
			`{"choices":[{"index":0,"delta":{"content":" street"}}]}`,
			`{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
			`{"choices":[],"usage":{"prompt_tokens":300,"completion_tokens":2}}`,
			`[DONE]`,
		} {
			fmt.Fprintf(w, "data: %s\n\n", ev)
			fl.Flush()
		}
	}))
	t.Cleanup(srv.Close)
	return srv, &images
}

// snapshotDir writes two small camera snapshots.
func snapshotDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for i := 0; i < 2; i++ {
		img := image.NewRGBA(image.Rect(0, 0, 64, 36))
		for y := 0; y < 36; y++ {
			for x := 0; x < 64; x++ {
				img.Set(x, y, color.RGBA{uint8(x * 4), uint8(y * 7), uint8(i * 100), 255})
			}
		}
		var b bytes.Buffer
		if err := png.Encode(&b, img); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("cam%d.png", i)), b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	return runCLIEnv(t, nil, args...)
}

// runCLIEnv runs the CLI with env added to its environment.
func runCLIEnv(t *testing.T, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	all := map[string]string{"VLMFLEET_LOG_LEVEL": "warn"}
	for k, v := range env {
		all[k] = v
	}
	code := run(args, &out, &errb, func(k string) string { return all[k] })
	return code, out.String(), errb.String()
}

func TestBenchEndToEnd(t *testing.T) {
	srv, images := benchFakeEngine(t)
	dir := t.TempDir()
	jsonPath, csvPath := filepath.Join(dir, "run.json"), filepath.Join(dir, "run.csv")
	code, out, errOut := runCLI(t, "bench", "--url", srv.URL+"/v1", "--model", "fake-vlm",
		"--sizes", "480p", "--multi-sizes", "480p", "--cameras", "1,2", "--requests", "4", "--images", "1,2", "--multi-requests", "2",
		"--warmup", "1", "--target", "1", "--image-dir", snapshotDir(t), "--device", "Test Box",
		"--engine-name", "vLLM", "--quantization", "BF16", "--params", "2.2", "--json", jsonPath, "--csv", csvPath)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	t.Log(out)
	// Plan: 480p x1 at 1 and 2 cameras, then 480p x2 at 1 camera (x1 at 1 camera is already measured).
	// Requests: (1+4) + (2+4) + (1+2) = 14, images 5 + 6 + 3*2 = 17.
	if got := images.Load(); got != 17 {
		t.Errorf("the engine received %d images, want 17", got)
	}
	for _, want := range []string{"mean response time within 1 s over the requests that completed, failed requests left out", "480p   2+", "TTFT mean", "fake-vlm on Test Box"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	r := readRun(t, jsonPath)
	if r.Source != protocol.SourceBench || r.Status != protocol.RunCompleted || r.Schema != protocol.SchemaVersion ||
		r.Config.Device != "Test Box" || r.Config.Engine != "vLLM" || r.Config.ParamsB != 2.2 || r.Config.Quantization != "BF16" ||
		r.Engine.Kind != "external" || r.Engine.Endpoint != srv.URL+"/v1" || len(r.ID) != 16 || r.Client.ImageCount != 2 {
		t.Errorf("run header %+v", r)
	}
	if r.Simulated || r.SimSpeedup != 0 || strings.Contains(out, "SIMULATED") {
		t.Errorf("an engine without a model list is labelled simulated (%v, %g):\n%s", r.Simulated, r.SimSpeedup, out)
	}
	if len(r.Combinations) != 3 {
		t.Fatalf("%d combinations, want 3", len(r.Combinations))
	}
	for _, c := range r.Combinations {
		if c.Failed != 0 || c.Completed == 0 || c.TTFT.N != c.Completed || c.CompletionTokens.Mean != 2 || c.PromptTokens.Mean != 300 {
			t.Errorf("%s: %+v", c.ComboKey, c)
		}
	}
	f, err := os.Open(csvPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 4 || rows[0][3] != "size" || rows[3][6] != "2" {
		t.Errorf("csv rows %q", rows)
	}
}

// bench checks the endpoint and the model before it measures: an
// unreachable URL, a URL without /v1 and a model the server does not serve
// end with one line that says so and exit 1, with nothing measured. They
// used to exit 0 with a run of failed requests and "Max Cameras 0".
func TestBenchChecksTheEndpointFirst(t *testing.T) {
	p, err := simengine.Lookup("Jetson AGX Orin", "Cosmos3-Edge", "BF16", "vLLM")
	if err != nil {
		t.Fatal(err)
	}
	sim := simtest.Serve(t, p, simengine.Options{Speedup: 10, Seed: 1})
	closed := "http://" + testutil.ClosedAddr(t) + "/v1"
	for _, c := range []struct {
		url, model, want string
	}{
		{"http://127.0.0.1:1/v1", "x", "http://127.0.0.1:1/v1 does not answer: dial tcp 127.0.0.1:1: connect: connection refused"},
		{closed, "m", "connection refused"},
		{strings.TrimSuffix(sim, "/v1"), p.Model, "the URL should end in /v1"},
		{sim, "no-such-model", `model "no-such-model": GET ` + sim + `/models does not list it; it serves "` + p.Model + `"`},
		// A full path is measured at its base: the check asks the base's
		// model list, not …/chat/completions/v1.
		{sim + "/chat/completions", "no-such-model", `GET ` + sim + `/models does not list it`},
		{strings.TrimSuffix(sim, "/v1") + "/chat/completions", p.Model, "the URL should end in /v1, e.g. " + sim},
	} {
		jsonPath := filepath.Join(t.TempDir(), "run.json")
		code, out, errOut := runCLIEnv(t, map[string]string{"VLMFLEET_LOG_LEVEL": "info"}, "bench", "--url", c.url, "--model", c.model, "--json", jsonPath)
		lines := strings.Split(strings.TrimSpace(errOut), "\n")
		if code != 1 || len(lines) != 1 || !strings.HasPrefix(lines[0], "vlmfleet bench: ") || !strings.Contains(lines[0], c.want) {
			t.Errorf("%s --model %s: exit %d, stderr %q; want 1 and one line with %q", c.url, c.model, code, errOut, c.want)
		}
		if out != "" {
			t.Errorf("%s: printed a summary of nothing:\n%s", c.url, out)
		}
		if _, err := os.Stat(jsonPath); err == nil {
			t.Errorf("%s: wrote a run document of nothing", c.url)
		}
	}
}

// A run in which every request of a combination failed ends non-zero,
// after it printed and wrote what it measured.
func TestBenchAllFailedCombinationExitsNonZero(t *testing.T) {
	p, err := simengine.Lookup("Jetson AGX Orin", "Cosmos3-Edge", "BF16", "vLLM")
	if err != nil {
		t.Fatal(err)
	}
	u := simtest.Serve(t, p, simengine.Options{Speedup: 10, Seed: 1, FailEvery: 1})
	jsonPath := filepath.Join(t.TempDir(), "run.json")
	code, out, errOut := runCLI(t, "bench", "--url", u, "--model", p.Model, "--sizes", "480p", "--multi-sizes", "480p",
		"--cameras", "1", "--requests", "2", "--images", "1", "--multi-requests", "1", "--image-dir", snapshotDir(t), "--json", jsonPath)
	if code != 1 || !strings.Contains(errOut, "every request of 480p-1img-1cam failed (HTTP 500") {
		t.Errorf("exit %d, stderr %q; want 1 naming the combination", code, errOut)
	}
	if !strings.Contains(out, "simulated failure") || !strings.Contains(out, "480p   0") {
		t.Errorf("summary:\n%s", out)
	}
	if r := readRun(t, jsonPath); r.Combinations[0].Failed != 2 {
		t.Errorf("failed %d, want 2", r.Combinations[0].Failed)
	}
}

func TestBenchFlagErrors(t *testing.T) {
	cases := map[string][]string{
		"--url is required":                             {"--model", "m"},
		"want http(s)://HOST:PORT/v1":                   {"--url", "ftp://x", "--model", "m"},
		"--model is required":                           {"--url", "http://127.0.0.1:1/v1"},
		`image size "4K"`:                               {"--url", "http://h/v1", "--model", "m", "--sizes", "720p,4K", "--multi-sizes", "720p,4K"},
		`--cameras: "0"`:                                {"--url", "http://h/v1", "--model", "m", "--cameras", "1,0"},
		"--cameras: 2 is listed twice":                  {"--url", "http://h/v1", "--model", "m", "--cameras", "2,2"},
		"--cache-prompt \"maybe\"":                      {"--url", "http://h/v1", "--model", "m", "--cache-prompt", "maybe"},
		"--target -1":                                   {"--url", "http://h/v1", "--model", "m", "--target", "-1"},
		`--statistic: statistic "p50"`:                  {"--url", "http://h/v1", "--model", "m", "--statistic", "p50"},
		`--search="many": want`:                         {"--url", "http://h/v1", "--model", "m", "--search=many"},
		"--search: workload.search: ceiling 8, want 16": {"--url", "http://h/v1", "--model", "m", "--search=8"},
		"written --search=40":                           {"--url", "http://h/v1", "--model", "m", "--search", "40"},
		"--requests 0: want 1 or more":                  {"--url", "http://h/v1", "--model", "m", "--requests", "0"},
		"unexpected arguments":                          {"--url", "http://h/v1", "--model", "m", "extra"},
	}
	for want, args := range cases {
		code, _, errOut := runCLI(t, append([]string{"bench"}, args...)...)
		if code != 2 || !strings.Contains(errOut, want) {
			t.Errorf("%q: exit %d, stderr %q; want 2 and %q", args, code, errOut, want)
		}
	}
	// Help is asked for: it goes to standard output.
	code, out, _ := runCLI(t, "bench", "-h")
	if code != 0 || !strings.Contains(out, "Max Cameras") || !strings.Contains(out, "-multi-sizes") ||
		!strings.Contains(out, protocol.Judgement{Statistic: protocol.StatisticP90}.Describe()) || strings.Contains(out, "with no failed") {
		t.Errorf("-h: exit %d, %q", code, out)
	}
}

// bench against a sped-up simulator labels the run simulated and puts its
// times back on the simulated device's scale.
func TestBenchAgainstSimulatorIsLabelledAndScaled(t *testing.T) {
	p, err := simengine.Lookup("Jetson AGX Orin", "Cosmos3-Edge", "BF16", "vLLM")
	if err != nil {
		t.Fatal(err)
	}
	const speedup = 10
	u := simtest.Serve(t, p, simengine.Options{Speedup: speedup, Seed: 1})
	jsonPath := filepath.Join(t.TempDir(), "run.json")
	code, out, errOut := runCLI(t, "bench", "--url", u, "--model", p.Model, "--sizes", "720p", "--multi-sizes", "720p",
		"--cameras", "1", "--requests", "3", "--images", "1", "--multi-requests", "3", "--warmup", "1", "--max-tokens", "8",
		"--image-dir", snapshotDir(t), "--json", jsonPath)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if !strings.Contains(out, "SIMULATED") {
		t.Errorf("the summary does not say the engine is simulated:\n%s", out)
	}
	r := readRun(t, jsonPath)
	if !r.Simulated || r.SimSpeedup != speedup {
		t.Errorf("run simulated %v, sim_speedup %g; want true, %d", r.Simulated, r.SimSpeedup, speedup)
	}
	if r.Config.Device != "Jetson AGX Orin" || r.Device.Kind != protocol.DeviceSimulated {
		t.Errorf("run filed under %q (%s), want the simulated Jetson AGX Orin", r.Config.Device, r.Device.Kind)
	}
	if len(r.Combinations) != 1 || r.Combinations[0].Completed != 3 {
		t.Fatalf("combinations %+v, want one with 3 requests completed", r.Combinations)
	}
	c := r.Combinations[0]
	// The simulator waits TTFT720/speedup (0.05 s); scaled back, the mean
	// is the seed figure of 0.51 s plus client overhead times ten. Left
	// unscaled it would be a tenth of that, scaled twice ten times more.
	if c.TTFT.Mean < 0.7*p.TTFT720 || c.TTFT.Mean > 6*p.TTFT720 {
		t.Errorf("TTFT mean %.3f s, want about the profile's %.2f s", c.TTFT.Mean, p.TTFT720)
	}
	for _, rec := range c.Requests {
		if rec.TTFT < 0.7*p.TTFT720 {
			t.Errorf("request %d TTFT %.3f s is not scaled back", rec.Seq, rec.TTFT)
		}
	}
	// No TPS above what the simulator writes (its profile's rate for one
	// camera) by more than 10 %: tokens that reach the client in bursts
	// must not make a rate of their own.
	if c.TPS.N > 0 && c.TPS.Mean > 1.1*p.TPS {
		t.Errorf("TPS %.1f, above the simulator's %.1f tok/s", c.TPS.Mean, p.TPS)
	}
}

// A remote endpoint without --device gets a warning that the device facts
// are this machine's; a loopback one does not.
func TestBenchWarnsRemoteDeviceFacts(t *testing.T) {
	_, port, _ := net.SplitHostPort(testutil.ClosedAddr(t))
	// 0.0.0.0 is not a loopback address, yet connecting to it fails at
	// once on this machine, so no request leaves it.
	for host, warn := range map[string]bool{"0.0.0.0": true, "127.0.0.1": false, "localhost": false} {
		code, _, errOut := runCLI(t, "bench", "--url", "http://"+net.JoinHostPort(host, port)+"/v1", "--model", "m",
			"--sizes", "480p", "--multi-sizes", "480p", "--cameras", "1", "--requests", "1", "--images", "1", "--multi-requests", "1",
			"--warmup", "0", "--image-dir", snapshotDir(t))
		if code != 1 || !strings.Contains(errOut, "does not answer") {
			t.Fatalf("%s: exit %d: %s; want 1 for an endpoint that does not answer", host, code, errOut)
		}
		if got := strings.Contains(errOut, "device facts describe this machine"); got != warn {
			t.Errorf("%s: warned %v, want %v:\n%s", host, got, warn, errOut)
		}
	}
}

// bench looks for the device tools on the CLI's PATH, not the process's.
func TestBenchDeviceToolsFromCLIPath(t *testing.T) {
	srv, _ := benchFakeEngine(t)
	bin := t.TempDir()
	marker := filepath.Join(t.TempDir(), "ran")
	script := "#!/bin/sh\necho \"$0 $*\" >> " + marker + "\nexit 9\n"
	if err := os.WriteFile(filepath.Join(bin, "nvidia-smi"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := runCLIEnv(t, map[string]string{"PATH": bin}, "bench", "--url", srv.URL+"/v1", "--model", "fake-vlm",
		"--sizes", "480p", "--multi-sizes", "480p", "--cameras", "1", "--requests", "1", "--images", "1", "--multi-requests", "1",
		"--warmup", "0", "--image-dir", snapshotDir(t))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Errorf("the nvidia-smi on the CLI's PATH was not run: %v", err)
	}
}

// readRun reads and decodes the result document bench --json wrote.
func readRun(t *testing.T, path string) *protocol.Run {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	r, err := protocol.DecodeRun(data)
	if err != nil {
		t.Fatalf("the --json document does not decode: %v", err)
	}
	return r
}

// bench against a llama-server names it with its build, sends
// cache_prompt:false to every request, records the prompt cache's hits
// (none), and warns when the server has fewer slots than cameras.
func TestBenchLlamaServerIsNamedCacheFreeAndSlotsWarned(t *testing.T) {
	srv := fakellama.Start(t, fakellama.Options{Slots: 1})
	jsonPath := filepath.Join(t.TempDir(), "run.json")
	code, out, errOut := runCLI(t, "bench", "--url", srv.URL+"/v1", "--model", "tiny", "--sizes", "480p", "--multi-sizes", "480p",
		"--cameras", "1,2", "--requests", "4", "--images", "1", "--multi-requests", "1", "--image-dir", snapshotDir(t), "--json", jsonPath)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	r := readRun(t, jsonPath)
	if r.Config.Engine != "llama.cpp" || r.Engine.Version != fakellama.Build || !strings.Contains(out, "(llama.cpp "+fakellama.Build+" at ") {
		t.Errorf("engine %q %q; summary:\n%s", r.Config.Engine, r.Engine.Version, out)
	}
	for _, b := range srv.Requests() {
		if b["cache_prompt"] != false {
			t.Fatalf("request without cache_prompt false: %v", b["cache_prompt"])
		}
	}
	for _, c := range r.Combinations {
		if c.CachedPromptTokens != 0 {
			t.Errorf("%s: %d prompt tokens from the cache", c.ComboKey, c.CachedPromptTokens)
		}
	}
	const warning = "the server has 1 slots (total_slots) but the plan has up to 2 cameras"
	if len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], warning) || !strings.Contains(out, "Warning: "+warning) || !strings.Contains(errOut, warning) {
		t.Errorf("run warnings %q; want the slots warning in the run, the summary and the log:\nstdout:\n%s\nstderr:\n%s", r.Warnings, out, errOut)
	}
}
