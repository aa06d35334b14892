package web_test

import (
	"testing"

	"github.com/chromedp/chromedp"
)

// TestPhoneWidthShowsMaxCameras: on a 390 px wide screen, Max Cameras and
// the result are on screen without scrolling sideways, each row still names
// its setup, and no sort arrow wraps onto a line of its own.
func TestPhoneWidthShowsMaxCameras(t *testing.T) {
	ctx := newTab(t)
	if _, err := chromedp.Run(ctx, chromedp.EmulateViewport(390, 844)); err != nil {
		t.Fatalf("viewport: %v", err)
	}
	open(t, ctx, serve(t, mustJSON(t, testDataset())))
	type box struct{ Left, Right, Width float64 }
	for _, key := range []string{"maxcams", "result", "rt"} {
		b := eval[box](t, ctx, `(() => { const r = document.querySelector('#table th[data-key="`+key+`"]').getBoundingClientRect(); return {Left: r.left, Right: r.right, Width: window.innerWidth}; })()`)
		if b.Left < 0 || b.Right > b.Width || b.Right <= b.Left {
			t.Errorf("column %s spans %.0f..%.0f px of a %.0f px screen", key, b.Left, b.Right, b.Width)
		}
	}
	if over := eval[float64](t, ctx, `(() => { const w = document.querySelector('.table-wrap'); return w.scrollWidth - w.clientWidth; })()`); over > 1 {
		t.Errorf("the table scrolls sideways by %.0f px", over)
	}
	if s := eval[string](t, ctx, `getComputedStyle(document.querySelector('#tbody tr.row .setup')).display + ' ' + document.querySelector('#tbody tr.row[data-id="edge-agx"] .setup').textContent`); s != "block 3.9B · BF16 · vLLM · Jetson AGX Orin" {
		t.Errorf("setup line under the model: %q", s)
	}
	// A label's arrow shares the line of its last word: the button has as
	// many lines as its text (an arrow alone on a line adds one). A line's
	// height is that of a one-letter label in the same header.
	wrapped := eval[[]string](t, ctx, `[...document.querySelectorAll('#table thead th')].filter(th => th.offsetParent !== null).filter(th => {
		const b = th.querySelector('button');
		const r = document.createRange();
		r.selectNodeContents([...b.childNodes].find(n => n.nodeType === 3));
		const textLines = new Set([...r.getClientRects()].map(x => Math.round(x.top))).size;
		const probe = b.cloneNode(false);
		probe.textContent = 'X';
		th.append(probe);
		const line = probe.getBoundingClientRect().height;
		probe.remove();
		const cs = getComputedStyle(b);
		const pad = parseFloat(cs.paddingTop) + parseFloat(cs.paddingBottom);
		const lines = Math.round((b.getBoundingClientRect().height - pad) / (line - pad));
		return lines > textLines;
	}).map(th => th.dataset.key)`)
	if len(wrapped) > 0 {
		t.Errorf("sort arrows on a line of their own: %v", wrapped)
	}
}
