package web_test

import (
	"slices"
	"strings"
	"testing"
)

// A level the row's latest run did not measure is marked with the earlier
// run it comes from, and the expanded row states the rule.
func TestExpandedRowMarksLevelsFromAnEarlierRun(t *testing.T) {
	ds := testDataset()
	row := &ds.Rows[0]
	for i := range row.Points {
		if row.Points[i].Cameras == 8 && row.Points[i].Size == "720p" && row.Points[i].Images == 1 {
			row.Points[i].Run = "earlier-run"
		}
	}
	ctx := newTab(t)
	open(t, ctx, serve(t, mustJSON(t, ds)))
	click(t, ctx, `#tbody tr[data-id="`+row.ID+`"] .toggle`)
	cams := eval[[]string](t, ctx, `[...document.querySelectorAll('#tbody tr.detail .d-measure tbody th')].map(e => e.textContent)`)
	if !slices.Contains(cams, "8 (earlier run)") || slices.Contains(cams, "4 (earlier run)") {
		t.Errorf("cameras %q, want 8 marked as from an earlier run and 4 not", cams)
	}
	note := eval[string](t, ctx, `(document.querySelector('#tbody tr.detail .d-earlier') || {}).textContent || ''`)
	if !strings.Contains(note, "earlier-run") || !strings.Contains(note, "each level is the newest run's that measured it") {
		t.Errorf("the rule is not stated: %q", note)
	}
}
