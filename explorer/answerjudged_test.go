package explorer

import (
	"bytes"
	"strings"
	"testing"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// judgedRow keeps up with at least 32 cameras by the mean, and with
// exactly 21 by p90: its searched levels 21 and 22 pass and fail by p90
// while their means still pass.
func judgedRow() Row {
	lvl := func(cams int, mean, p90 float64, search bool) Point {
		p := pt("720p", 1, cams, mean, 30)
		p.TTFTP90, p.Search = p90, search
		p.Tail = &protocol.TTFTTail{Due: 8, P90: p90, P95: p90}
		return p
	}
	r := Row{RowConfig: RowConfig{ID: "rtx", Model: "Qwen3-VL-4B-Instruct", Quantization: "BF16", Engine: "vLLM", Device: "RTX PRO 6000", PowerMode: "600 W limit"},
		Points: []Point{lvl(1, 0.2, 0.3, false), lvl(2, 0.3, 0.4, false), lvl(4, 0.4, 0.6, false), lvl(8, 0.6, 0.9, false),
			lvl(16, 1.2, 2.1, false), lvl(32, 2.6, 4.2, true), lvl(24, 2.1, 3.6, true), lvl(20, 1.5, 2.8, true),
			lvl(22, 1.8, 3.2, true), lvl(21, 1.6, 2.9, true)}}
	r.Explanation = Explain(r)
	return r
}

// The answer read by p90 is one answer: the table's Max Cameras and every
// sentence under it judge by p90, never by the mean the explanation is
// stored at.
func TestAnswerSentencesJudgeAsTheTable(t *testing.T) {
	ds := Dataset{Rows: []Row{judgedRow()}}
	q := DefaultQuery()
	q.Statistic = protocol.StatisticP90
	res := Select(ds, q)
	if len(res.Rows) != 1 || res.Rows[0].MaxCamerasLabel != "21" {
		t.Fatalf("rows %+v, want one row with Max Cameras 21 by p90", res.Rows)
	}
	text := strings.Join(res.Rows[0].Explanation, "\n")
	if !strings.Contains(text, "9 of 10 answers starting within 3 s") || !strings.Contains(text, "it keeps up with 21 cameras at once") {
		t.Errorf("explanation by p90 does not say 21 cameras by p90:\n%s", text)
	}
	if strings.Contains(text, "32") {
		t.Errorf("explanation by p90 speaks of the mean's 32 cameras:\n%s", text)
	}
	var out bytes.Buffer
	if err := WriteAnswer(&out, ds, q); err != nil {
		t.Fatal(err)
	}
	if s := out.String(); strings.Contains(s, "at least 32") || !strings.Contains(s, "21 cameras at once") {
		t.Errorf("the answer contradicts its table:\n%s", s)
	}
	// Its first sentence gives the mean beside the table's p90: it says so.
	if s := out.String(); !strings.Contains(s, "image after 0.2 s on average, then writes 30 tok/s.") {
		t.Errorf("the answer by p90 gives a mean without saying so:\n%s", s)
	}
	if res.Rows[0].RunID != ds.Rows[0].Run.ID {
		t.Errorf("run id %q, want the row's run %q", res.Rows[0].RunID, ds.Rows[0].Run.ID)
	}
	// At the default view the stored explanation is the answer.
	def := Select(ds, DefaultQuery())
	if got := strings.Join(def.Rows[0].Explanation, "\n"); !strings.Contains(got, "at least 32 cameras") || !strings.Contains(got, "image after 0.2 s, then writes") {
		t.Errorf("explanation by the mean:\n%s", got)
	}
}
