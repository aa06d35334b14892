package profiles

import (
	"bufio"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/vlmfleet/vlmfleet/internal/testutil"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// seedPath is a copy of the contract (NVIDIA's performance page), kept in
// the repository so that a fresh clone tests against it;
// $VLMFLEET_PROFILES_SEED_CONTRACT names the contract itself where a
// checkout has it at hand (scripts/test sets it from the shared folder).
var seedPath = filepath.Join("testdata", "seed.txt")

func TestSeedCopyIsTheContract(t *testing.T) {
	testutil.SameAsContract(t, seedPath, "VLMFLEET_PROFILES_SEED_CONTRACT")
}

// seedLine is one table line of the page, its cells by column title.
type seedLine struct {
	model, gpu, precision, tp, table string
	cells                            map[string]string
	lineNo                           int
}

var seedModels = map[string]bool{
	"Llama-3.2-11B-Vision-Instruct": true, "Llama-3.2-90B-Vision-Instruct": true, "nemoretriever-parse": true,
}

var (
	seedGPU       = regexp.MustCompile(`^(H100|A100|L40S|A10G)\b`)
	seedPrecision = regexp.MustCompile(`^(FP8|BF16)$`)
	seedTP        = regexp.MustCompile(`^TP(\d+)$`)
	seedFigures   = regexp.MustCompile(`^\d[\d.\tx]*$`)
)

// parseSeed reads the page's results: the headings (model, GPU,
// precision, TP, table title), each table's column titles and its lines.
// It counts the tables as it finds them.
func parseSeed(t *testing.T) (lines []seedLine, tables int) {
	t.Helper()
	f, err := os.Open(seedPath)
	if err != nil {
		t.Fatalf("the seed is part of the repository: %v", err)
	}
	defer f.Close()
	var cur seedLine
	var titles []string
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		text := sc.Text()
		switch {
		case seedModels[text]:
			cur.model = text
		case seedGPU.MatchString(text) && !strings.Contains(text, "\t"):
			cur.gpu = text
		case seedPrecision.MatchString(text):
			cur.precision = text
		case seedTP.MatchString(text):
			cur.tp = seedTP.FindStringSubmatch(text)[1]
		case text == "Min Latency" || text == "Max Throughput":
			cur.table, titles = text, nil
			tables++
		case strings.HasPrefix(text, "ISL\t") || strings.HasPrefix(text, "OSL\t"):
			titles = strings.Split(text, "\t")
		case titles != nil && seedFigures.MatchString(text):
			vals := strings.Split(text, "\t")
			if len(vals) != len(titles) {
				t.Fatalf("seed line %d: %d cells under %d titles", n, len(vals), len(titles))
			}
			l := cur
			l.lineNo, l.cells = n, map[string]string{}
			for i, title := range titles {
				l.cells[title] = vals[i]
			}
			lines = append(lines, l)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return lines, tables
}

// The built-in lines are the page's, line by line: 65 lines in 28 tables.
func TestPublishedLinesAreTheSeeds(t *testing.T) {
	seed, tables := parseSeed(t)
	if len(seed) != 65 || tables != 28 {
		t.Fatalf("the seed: %d lines in %d tables, want 65 in 28", len(seed), tables)
	}
	rows, err := Published()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(seed) {
		t.Fatalf("%d published lines, the seed has %d", len(rows), len(seed))
	}
	for i, s := range seed {
		if err := sameLine(s, rows[i]); err != "" {
			t.Errorf("seed line %d (%s %s %s TP%s %s): %s", s.lineNo, s.model, s.gpu, s.precision, s.tp, s.table, err)
		}
	}
}

// sameLine says how r differs from the seed's line s, or "".
func sameLine(s seedLine, r protocol.ProfileRow) string {
	profile := map[string]string{"Min Latency": protocol.ProfileMinLatency, "Max Throughput": protocol.ProfileMaxThroughput}[s.table]
	wantISL := s.cells["ISL"]
	gotISL := ""
	if r.ISL != nil {
		gotISL = strconv.Itoa(*r.ISL)
	}
	var diffs []string
	for _, f := range []struct{ name, got, want string }{
		{"model", r.Model, s.model}, {"gpu", r.GPU, s.gpu}, {"precision", r.Precision, s.precision},
		{"tp", strconv.Itoa(r.TP), s.tp}, {"gpu_count", strconv.Itoa(r.GPUCount), s.tp}, {"profile", r.Profile, profile},
		{"isl", gotISL, wantISL}, {"osl", strconv.Itoa(r.OSL), s.cells["OSL"]},
		{"image", strconv.Itoa(r.Width) + "x" + strconv.Itoa(r.Height), s.cells["Image Size (width x height in px)"]},
		{"ttft_ms", cell(r.TTFTMs), figureOf(s.cells["Avg TTFT (msec)"])},
		{"itl_ms", cell(r.ITLMs), figureOf(s.cells["Avg ITL (msec)"])},
		{"request_latency_ms", cell(r.RequestLatencyMs), figureOf(s.cells["Avg Request Latency (msec)"])},
		{"request_throughput", cell(r.RequestThroughput), figureOf(s.cells["Request Throughput (reqs/sec)"])},
		{"source", r.Source, protocol.ProfileSourcePublished}, {"note", r.Note, "published (NVIDIA NIM, genai-perf)"},
		{"image_format", r.ImageFormat, "png"},
	} {
		if f.got != f.want {
			diffs = append(diffs, f.name+" "+strconv.Quote(f.got)+", the seed says "+strconv.Quote(f.want))
		}
	}
	return strings.Join(diffs, "; ")
}

func cell(v *float64) string {
	if v == nil {
		return ""
	}
	return strconv.FormatFloat(*v, 'g', -1, 64)
}

// figureOf is the seed's figure as cell writes it ("19.0" is 19).
func figureOf(s string) string {
	if s == "" {
		return ""
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return "not a number: " + s
	}
	return cell(&v)
}

// The page's own identity, a check on the transcription: in every Min
// Latency line with an ISL, request latency = TTFT + ITL × OSL to the
// millisecond (198 + 7.4 × 1000 = 7598).
func TestPublishedLatencyIsTTFTPlusITLTimesOSL(t *testing.T) {
	rows, err := Published()
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, r := range rows {
		if r.Profile != protocol.ProfileMinLatency || r.ISL == nil {
			continue
		}
		checked++
		if r.TTFTMs == nil || r.ITLMs == nil || r.RequestLatencyMs == nil {
			t.Errorf("%s %s %s TP%d ISL %d: a Min Latency line without TTFT, ITL or latency", r.Model, r.GPU, r.Precision, r.TP, *r.ISL)
			continue
		}
		want := *r.TTFTMs + *r.ITLMs*float64(r.OSL)
		if math.Abs(*r.RequestLatencyMs-want) >= 0.5 {
			t.Errorf("%s %s %s TP%d ISL %d OSL %d: latency %g, TTFT + ITL × OSL = %g + %g × %d = %g",
				r.Model, r.GPU, r.Precision, r.TP, *r.ISL, r.OSL, *r.RequestLatencyMs, *r.TTFTMs, *r.ITLMs, r.OSL, want)
		}
	}
	if checked != 21 {
		t.Errorf("checked %d Min Latency lines with an ISL, the seed has 21", checked)
	}
}
