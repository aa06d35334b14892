package profiles

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/vlmfleet/vlmfleet/protocol"
)

func ptr[T any](v T) *T { return &v }

// measuredLine is a hand-made measured line of the identity of the
// seed's first line (Llama-3.2-11B, H100-HBM3-80GB, FP8, TP1, ISL 1000,
// OSL 1000, 1120x1120 png), 10 % slower; the names in another case.
func measuredLine() protocol.ProfileRow {
	return protocol.ProfileRow{
		Model: "llama-3.2-11b-vision-instruct", GPU: "h100-hbm3-80gb ", GPUCount: 1, Precision: "fp8", TP: 1, Engine: "vLLM",
		Profile: protocol.ProfileMinLatency, ISL: ptr(1000), OSL: 1000, Width: 1120, Height: 1120, ImageFormat: "png",
		Concurrency: ptr(1), TTFTMs: ptr(217.8), ITLMs: ptr(8.14), RequestLatencyMs: ptr(8357.8), OutputTokensPerSec: ptr(119.6),
		OSLHeld: ptr(true), Source: protocol.ProfileSourceMeasured, Simulated: true,
	}
}

func TestJoinSetsAMeasuredLineBesideThePublishedOne(t *testing.T) {
	published, err := Published()
	if err != nil {
		t.Fatal(err)
	}
	m := measuredLine()
	other := measuredLine()
	other.OSL = 500 // no page publishes OSL 500
	lines := Join(published, []protocol.ProfileRow{m, other})
	if len(lines) != len(published)+1 {
		t.Fatalf("%d lines, want the %d published and the one measured only", len(lines), len(published))
	}
	first := lines[0]
	if first.Published == nil || first.Measured == nil || first.Measured.Engine != "vLLM" {
		t.Fatalf("the first line: %+v, want the published line with the measured one beside it", first)
	}
	d := first.Diff()
	for name, tc := range map[string]struct {
		got  *float64
		want float64
	}{"ttft": {d.TTFT, 10}, "itl": {d.ITL, 10}, "request latency": {d.RequestLatency, 10}} {
		if tc.got == nil || math.Abs(*tc.got-tc.want) > 1e-9 {
			t.Errorf("%s: %v %%, want %+g %%", name, tc.got, tc.want)
		}
	}
	if d.RequestThroughput != nil || d.OutputTokensPerSec != nil {
		t.Errorf("figures the published line lacks: %+v, want nil", d)
	}
	last := lines[len(lines)-1]
	if last.Published != nil || last.Measured == nil || last.Measured.OSL != 500 || last.Diff() != (Diff{}) {
		t.Errorf("the line no page publishes: %+v, want it measured only, last, without a difference", last)
	}
	rows := Rows(lines)
	if len(rows) != len(published)+2 || rows[1].Source != protocol.ProfileSourceMeasured || rows[2] != published[1] {
		t.Errorf("rows: %d, the second %+v; want each measured row after its published one", len(rows), rows[1])
	}
}

// Of two measured lines of one identity, the later one stands.
func TestJoinKeepsTheLastMeasuredLine(t *testing.T) {
	a, b := measuredLine(), measuredLine()
	b.RequestLatencyMs = ptr(7000.0)
	lines := Join(nil, []protocol.ProfileRow{a, b})
	if len(lines) != 1 || *lines[0].Measured.RequestLatencyMs != 7000 {
		t.Fatalf("%+v, want one line holding the later measurement", lines)
	}
}

func TestWriteTablesShowsTheMeasuredLineAgainstThePublished(t *testing.T) {
	published, err := Published()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteTables(&buf, append(published, measuredLine())); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		"Llama-3.2-11B-Vision-Instruct\n  H100-HBM3-80GB\n    FP8\n      TP1\n",
		"Min Latency (concurrency 1)",
		"1000  1000  1120x1120                          198              7.4             7598                        -                  published (NVIDIA NIM, genai-perf)",
		"1000  1000  1120x1120                          218              8.1             8358                        119.6              measured, SIMULATED  +10.0 % latency\n",
		"nemoretriever-parse\n  H100-SXM-80GB\n    BF16\n      TP1\n",
		"OSL   Image Size (width x height in px)  Avg Request Latency (msec)  Source",
		"3579  1648x2048                          1.80                           published (NVIDIA NIM, genai-perf)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the tables lack %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "Max Throughput (at the concurrency"); n != 14 {
		t.Errorf("%d Max Throughput tables, want the seed's 14", n)
	}
	if n := strings.Count(out, "Min Latency (concurrency 1)"); n != 14 {
		t.Errorf("%d Min Latency tables, want the seed's 14", n)
	}
}

// A lab's line carries the GPU's name as nvidia-smi reports it: the
// published H100 lines, spelled "H100-HBM3-80GB" (Llama) and
// "H100-SXM-80GB" (nemoretriever-parse), are both the one "NVIDIA H100
// 80GB HBM3", and "A100-SXM-80GB" is "NVIDIA A100-SXM4-80GB". Each joins
// its published line and is spelled as the page spells it; an H100 of
// another kind joins nothing.
func TestJoinKnowsTheGPUByItsNvidiaSmiName(t *testing.T) {
	published, err := Published()
	if err != nil {
		t.Fatal(err)
	}
	llama := measuredLine()
	llama.GPU = "NVIDIA H100 80GB HBM3"
	parse := nemoretrieverLine(t, published, "H100-SXM-80GB")
	parse.GPU = "NVIDIA H100 80GB HBM3"
	a100 := nemoretrieverLine(t, published, "A100-SXM-80GB")
	a100.GPU = "NVIDIA A100-SXM4-80GB"
	pcie := measuredLine()
	pcie.GPU = "NVIDIA H100 PCIe"
	lines := Join(published, []protocol.ProfileRow{llama, parse, a100, pcie})
	if len(lines) != len(published)+1 {
		t.Fatalf("%d lines, want the %d published and the PCIe card's alone", len(lines), len(published))
	}
	joined := map[string]string{}
	for _, l := range lines {
		if l.Published != nil && l.Measured != nil {
			joined[l.Published.Model+" on "+l.Published.GPU] = l.Measured.GPU
		}
	}
	for _, want := range []string{
		"Llama-3.2-11B-Vision-Instruct on H100-HBM3-80GB",
		"nemoretriever-parse on H100-SXM-80GB",
		"nemoretriever-parse on A100-SXM-80GB",
	} {
		gpu, ok := joined[want]
		if !ok {
			t.Errorf("%s: no measured line beside it; joined %v", want, joined)
			continue
		}
		if page := want[strings.LastIndex(want, " ")+1:]; gpu != page {
			t.Errorf("%s: the measured line's GPU is %q, want the page's %q", want, gpu, page)
		}
	}
	if last := lines[len(lines)-1]; last.Published != nil || last.Measured.GPU != "NVIDIA H100 PCIe" {
		t.Errorf("the H100 PCIe line: %+v, want it alone under its own name", last)
	}
}

// nemoretrieverLine is a measured copy of nemoretriever-parse's first
// published line on gpu.
func nemoretrieverLine(t *testing.T, published []protocol.ProfileRow, gpu string) protocol.ProfileRow {
	t.Helper()
	for _, r := range published {
		if r.Model == "nemoretriever-parse" && r.GPU == gpu {
			r.Source, r.Simulated = protocol.ProfileSourceMeasured, true
			return r
		}
	}
	t.Fatalf("no published nemoretriever-parse line on %s", gpu)
	return protocol.ProfileRow{}
}

// The published lines stay apart under the GPU identity: no two of the
// seed's lines are one line once their GPUs' spellings are one GPU.
func TestPublishedLinesAreDistinctByGPUIdentity(t *testing.T) {
	published, err := Published()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[Key]bool{}
	for _, r := range published {
		k := KeyOf(r)
		if seen[k] {
			t.Errorf("two published lines of one identity: %+v", k)
		}
		seen[k] = true
	}
	for _, c := range []struct{ a, b string }{
		{"NVIDIA H100 80GB HBM3", "H100-HBM3-80GB"},
		{"NVIDIA H100 80GB HBM3", "H100-SXM-80GB"},
		{"NVIDIA A100-SXM4-80GB", "A100-SXM-80GB"},
		{"NVIDIA L40S", "L40S"},
		{"NVIDIA A10G", "a10g"},
	} {
		if gpuIdentity(c.a) != gpuIdentity(c.b) {
			t.Errorf("%q and %q: identities %q and %q, want one", c.a, c.b, gpuIdentity(c.a), gpuIdentity(c.b))
		}
	}
	for _, c := range []struct{ a, b string }{
		{"NVIDIA H100 PCIe", "H100-HBM3-80GB"},
		{"NVIDIA H100 NVL", "H100-SXM-80GB"},
		{"NVIDIA A100 80GB PCIe", "A100-SXM4-80GB"},
		{"NVIDIA A100-SXM4-40GB", "A100-SXM4-80GB"},
	} {
		if gpuIdentity(c.a) == gpuIdentity(c.b) {
			t.Errorf("%q and %q: one identity %q, want two", c.a, c.b, gpuIdentity(c.a))
		}
	}
}
