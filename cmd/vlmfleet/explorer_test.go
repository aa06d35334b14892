package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/vlmfleet/vlmfleet/explorer"
	"github.com/vlmfleet/vlmfleet/harness/labtest"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// seedRuns is the seed's 38 configurations as result documents (made by the
// explorer package's tests from explorer/testdata/seed.txt).
const seedRuns = "../../explorer/testdata/seed_runs.json"

type runSlice []protocol.Run

func (s runSlice) Runs(context.Context) ([]protocol.Run, error) { return s, nil }

func tableLines(out string) []string {
	return strings.Split(strings.TrimRight(out, "\n"), "\n")
}

func TestExplorerTableFromFile(t *testing.T) {
	code, out, errOut := cliRun(t, nil, "explorer", "table", "--file", seedRuns)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := tableLines(out)
	if !strings.HasPrefix(lines[0], "MODEL") || !strings.Contains(lines[0], "MAX CAMERAS") {
		t.Fatalf("header %q", lines[0])
	}
	if last := lines[len(lines)-1]; last != "38 rows at 720p, 1 camera, 1 image per camera, target 3 s" {
		t.Errorf("footer %q", last)
	}
	// Sorted by Max Cameras: the 16+ rows first, then 8+, ...; a 0 row last says FAIL.
	if f := strings.Fields(lines[1]); !strings.Contains(lines[1], "RTX PRO 6000") || f[len(f)-2] != "16+" || f[len(f)-1] != "PASS" {
		t.Errorf("first row %q, want an RTX PRO 6000 row with 16+ PASS", lines[1])
	}
	if f := strings.Fields(lines[len(lines)-2]); f[len(f)-2] != "0" || f[len(f)-1] != "FAIL" {
		t.Errorf("last row %q, want Max Cameras 0 and FAIL", lines[len(lines)-2])
	}
	var edge string
	for _, l := range lines {
		if strings.HasPrefix(l, "Cosmos3-Edge ") && strings.Contains(l, "Jetson AGX Orin") {
			edge = l
		}
	}
	if f := strings.Fields(edge); len(f) < 10 || f[1] != "3.9B" || f[2] != "BF16" || f[3] != "vLLM" || f[7] != "0.51" || f[9] != "45.6" || f[10] != "8+" || f[11] != "PASS" {
		t.Errorf("Cosmos3-Edge on Jetson AGX Orin: %q", edge)
	}
	// Columns align: every row starts its DEVICE column where the header does.
	col := strings.Index(lines[0], "DEVICE")
	for _, l := range lines[1 : len(lines)-1] {
		if l[col-2:col] != "  " || l[col] == ' ' || strings.HasSuffix(l, " ") {
			t.Errorf("row not aligned under DEVICE: %q", l)
		}
	}
}

func TestExplorerTableJSONAndOptions(t *testing.T) {
	// The seed's example: at a 1 s target Cosmos3-Edge keeps up with 2 cameras.
	code, out, errOut := cliRun(t, nil, "explorer", "table", seedRuns, "--cameras", "2", "--target", "1", "--sort", "ttft", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var res explorer.RowsResponse
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if res.Cameras != 2 || res.Target != 1 || len(res.Rows) != 38 {
		t.Fatalf("%+v with %d rows", res.Query, len(res.Rows))
	}
	for i := 1; i < len(res.Rows); i++ {
		if *res.Rows[i].TTFT < *res.Rows[i-1].TTFT {
			t.Fatalf("not sorted by ttft at %d", i)
		}
	}
	for _, r := range res.Rows {
		if r.Model == "Cosmos3-Edge" && r.Device == "Jetson AGX Orin" && (r.MaxCamerasLabel != "2" || *r.TTFT != 0.93 || !r.Pass) {
			t.Errorf("Cosmos3-Edge at 2 cameras, 1 s: %+v", r)
		}
	}
	// 16 cameras were measured on RTX PRO 6000 only; 2K with one camera only.
	_, out, _ = cliRun(t, nil, "explorer", "table", seedRuns, "--cameras", "16", "--sort", "device")
	if lines := tableLines(out); len(lines) != 2+19 || !strings.HasPrefix(lines[len(lines)-1], "19 rows at 720p, 16 cameras") {
		t.Errorf("16 cameras: %d lines, footer %q", len(lines), lines[len(lines)-1])
	}
	_, out, _ = cliRun(t, nil, "explorer", "table", seedRuns, "--size", "2K", "--cameras", "2")
	if out != "no configuration was measured at 2K, 2 cameras, 1 image per camera, target 3 s\n" {
		t.Errorf("nothing measured: %q", out)
	}
}

// A frame clock and a statistic read the levels measured on that clock and
// judge by that percentile; a row imported with its means only says n/a.
func TestExplorerTableFrameClockAndStatistic(t *testing.T) {
	const buyerRuns = "../../explorer/testdata/buyer_runs.json"
	code, out, errOut := cliRun(t, nil, "explorer", "table", buyerRuns, "--statistic", "p90")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"TTFT P90", "judged by p90", "Gemma-4-E4B-it (Q4_0, llama.cpp) on Jetson Orin NX: p90 n/a: published with means only"} {
		if !strings.Contains(out, want) {
			t.Errorf("by p90 the table lacks %q:\n%s", want, out)
		}
	}
	code, out, errOut = cliRun(t, nil, "explorer", "table", buyerRuns, "--every", "5", "--cameras", "16", "--json")
	var res explorer.RowsResponse
	if err := json.Unmarshal([]byte(out), &res); code != 0 || err != nil || len(res.Rows) != 1 {
		t.Fatalf("every 5 s: exit %d, %v, %s%s", code, err, out, errOut)
	}
	if r := res.Rows[0]; r.MaxCamerasLabel != "10" || r.Pass || r.FramesDropped != 9 || !r.Search || !r.Exact {
		t.Errorf("every 5 s at 16 cameras: %+v, want Max 10 exact by search, FAIL with 9 frames dropped", r)
	}
}

func TestExplorerTableFromController(t *testing.T) {
	real := labtest.ResultDoc("real", "Qwen3-VL-4B-Instruct")
	sim := labtest.ResultDoc("sim", "Qwen3-VL-4B-Instruct")
	sim.Simulated = true
	srv := httptest.NewServer(explorer.NewHandler(runSlice{real, sim}, zerolog.New(io.Discard)))
	defer srv.Close()
	code, out, errOut := cliRun(t, map[string]string{"VLMFLEET_CONTROLLER": srv.URL}, "explorer", "table", "--sort", "model")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := tableLines(out)
	if len(lines) != 4 || strings.HasSuffix(lines[1], "SIM") || !strings.HasSuffix(lines[2], "SIM") || !strings.Contains(lines[3], "SIM: 1 from simulated runs") {
		t.Errorf("table:\n%s", out)
	}
	if f := strings.Fields(lines[1]); f[len(f)-2] != "2+" || f[len(f)-1] != "PASS" {
		t.Errorf("real row %q, want 2+ PASS", lines[1])
	}
	// A level where every request failed reads "all failed" and FAIL.
	real.Combinations = append(real.Combinations, protocol.Combination{ComboKey: protocol.ComboKey{Size: "720p", Images: 1, Cameras: 4}, Failed: 8})
	srv2 := httptest.NewServer(explorer.NewHandler(runSlice{real}, zerolog.New(io.Discard)))
	defer srv2.Close()
	_, out, _ = cliRun(t, nil, "explorer", "table", "--controller", srv2.URL, "--cameras", "4")
	// and a line under the table says how many failed (and why, when the run says).
	if lines := tableLines(out); len(lines) != 4 || !strings.HasSuffix(lines[1], "all failed  -    2            FAIL") ||
		lines[2] != "  Qwen3-VL-4B-Instruct (Q8_0, llama.cpp) on Jetson AGX Orin: 8 requests failed" {
		t.Errorf("all failed at 4 cameras:\n%s", out)
	}
	// A controller that is not there.
	srv.Close()
	if code, _, errOut := cliRun(t, nil, "explorer", "table", "--controller", srv.URL); code != 1 || !strings.Contains(errOut, "fetch explorer data") {
		t.Errorf("closed controller: exit %d, %s", code, errOut)
	}
	// An answer that is not the explorer's data.
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, `{"schema": 2}`) }))
	defer bad.Close()
	if code, _, errOut := cliRun(t, nil, "explorer", "table", "--controller", bad.URL); code != 1 || !strings.Contains(errOut, "dataset schema 2") {
		t.Errorf("newer schema: exit %d, %s", code, errOut)
	}
}

func TestExplorerUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"explorer"}, "table, export or profiles"},
		{[]string{"explorer", "show"}, "table, export or profiles"},
		{[]string{"explorer", "table", "--size", "4K", seedRuns}, "size"},
		{[]string{"explorer", "table", "--images", "0", seedRuns}, "images"},
		{[]string{"explorer", "table", "--target", "0", seedRuns}, "target"},
		{[]string{"explorer", "table", "--sort", "size", seedRuns}, "--sort"},
		{[]string{"explorer", "table", "--controller", "http://127.0.0.1:1", "--file", seedRuns}, "not both"},
		{[]string{"explorer", "export", seedRuns}, "--out"},
	} {
		code, _, errOut := cliRun(t, nil, c.args...)
		if code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, %q; want 2 and %q", c.args, code, errOut, c.want)
		}
	}
	if code, _, errOut := cliRun(t, nil, "explorer", "table", "--file", "nope.json"); code != 1 || !strings.Contains(errOut, "nope.json") {
		t.Errorf("missing file: exit %d, %s", code, errOut)
	}
}

func TestExplorerExport(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "explorer.html")
	code, stdout, errOut := cliRun(t, nil, "explorer", "export", "--out", out, "--file", seedRuns)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	st, err := os.Stat(out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(stdout, "wrote "+out+": 38 rows (0 simulated) from "+seedRuns) || !strings.Contains(stdout, ", "+itoaTest(st.Size())+" bytes") {
		t.Errorf("stdout %q (file %d bytes)", stdout, st.Size())
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("%d files in the directory, want only explorer.html (no temporary left)", len(entries))
	}
	// "-" writes the same page to standard output.
	// The pages differ only in when they were generated, a time whose
	// printed length varies with its trailing zeros.
	generated := regexp.MustCompile(`"generated":"[^"]*"`)
	_, page, _ := cliRun(t, nil, "explorer", "export", "--out", "-", seedRuns)
	if data, _ := os.ReadFile(out); generated.ReplaceAllString(page, "") != generated.ReplaceAllString(string(data), "") {
		t.Errorf("--out - wrote %d bytes that differ from the file's %d", len(page), len(data))
	}
	// A directory that does not exist fails without leaving anything behind.
	if code, _, errOut := cliRun(t, nil, "explorer", "export", "--out", filepath.Join(dir, "no", "x.html"), seedRuns); code != 1 || !strings.Contains(errOut, "x.html") {
		t.Errorf("bad --out: exit %d, %s", code, errOut)
	}
}

func itoaTest(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}
