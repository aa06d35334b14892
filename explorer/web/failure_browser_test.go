package web_test

import (
	"testing"
)

// TestAllFailedRowSaysWhy: a row where every request at the selection
// failed (the Orin NX at 2K: HTTP 400, the image exceeds the engine's
// largest input) shows that and the reason, not a bare "—".
func TestAllFailedRowSaysWhy(t *testing.T) {
	ds := datasetOf(func(id string) bool { return id == "cr2b-nx" || id == "edge-agx" }, nil)
	const reason = "HTTP 400: image of 3840 tokens exceeds largest input (2048)"
	for i := range ds.Rows {
		if ds.Rows[i].ID != "cr2b-nx" {
			continue
		}
		for j, p := range ds.Rows[i].Points {
			if p.Size == "720p" && p.Images == 1 && p.Cameras == 1 {
				p.TTFT, p.TTFTP90, p.TPS, p.Completed, p.Failed, p.Error = 0, 0, 0, 0, 8, reason
				ds.Rows[i].Points[j] = p
			}
		}
	}
	ctx := newTab(t)
	open(t, ctx, serve(t, mustJSON(t, ds)))
	rows := shownRows(t, ctx)
	if r := rowByID(t, rows, "cr2b-nx"); r.RT != "all failed" || r.Result != "FAIL" {
		t.Errorf("all-failed row shows %+v", r)
	}
	why := eval[string](t, ctx, `(() => { const w = document.querySelector('#tbody tr.row[data-id="cr2b-nx"] .why'); return w.hidden ? '' : w.textContent; })()`)
	if want := "all 8 requests failed: " + reason; why != want {
		t.Errorf("reason %q, want %q", why, want)
	}
	if other := eval[bool](t, ctx, `document.querySelector('#tbody tr.row[data-id="edge-agx"] .why').hidden`); !other {
		t.Error("a row with figures shows a failure reason")
	}
}
