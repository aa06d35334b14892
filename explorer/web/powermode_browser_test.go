package web_test

import (
	"bytes"
	"encoding/csv"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/rs/zerolog"

	"github.com/vlmfleet/vlmfleet/explorer"
)

// powerModeRuns: one model on one Jetson measured in MAXN and in 15W
// (slower at 720p, as a lower mode is).
func powerModeRuns() compareStore {
	maxn := comparedRun("maxn", 1, 0.25)
	maxn.Config.PowerMode = "MAXN"
	low := comparedRun("low", 2, 0.40)
	low.Config.PowerMode = "15W"
	return compareStore{maxn, low}
}

// servePowerModes serves powerModeRuns as a controller does.
func servePowerModes(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(explorer.NewHandler(powerModeRuns(), zerolog.Nop()))
	t.Cleanup(srv.Close)
	return srv.URL
}

// Two power modes of one model on one device are two rows, each showing
// its mode with the device, with no regression mark between them; the
// CSV carries the mode in its last column.
func TestPowerModesAreTwoRows(t *testing.T) {
	base := servePowerModes(t)
	ctx := newTab(t)
	open(t, ctx, base+"/?size=720p")
	var devices []string
	for _, r := range shownRows(t, ctx) {
		devices = append(devices, r.Device)
	}
	slices.Sort(devices)
	if want := []string{"Jetson AGX Orin · 15W", "Jetson AGX Orin · MAXN"}; !slices.Equal(devices, want) {
		t.Errorf("devices shown %q, want %q", devices, want)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll('#tbody a.badge-worse').length`); n != 0 {
		t.Errorf("%d regression marks between two power modes, want none", n)
	}
	recs, err := csv.NewReader(bytes.NewReader(downloadBytes(t, ctx, "#csv"))).ReadAll()
	if err != nil || len(recs) != 3 {
		t.Fatalf("CSV: %v, %q", err, recs)
	}
	last := len(recs[0]) - 1
	modes := []string{recs[1][last], recs[2][last]}
	slices.Sort(modes)
	if recs[0][last] != "power_mode" || !slices.Equal(modes, []string{"15W", "MAXN"}) || recs[1][4] != "Jetson AGX Orin" {
		t.Errorf("CSV column %q holds %q (device %q), want power_mode with 15W and MAXN beside the bare device", recs[0][last], modes, recs[1][4])
	}
}

// The compare page sets two power modes side by side but says they are
// not comparable as a regression, and judges no figure.
func TestComparePagePowerModes(t *testing.T) {
	base := servePowerModes(t)
	ctx := newTab(t)
	do(t, ctx, chromedp.Navigate(base+"/compare?a=maxn&b=low"))
	waitCompare(t, ctx)
	got := eval[map[string]string](t, ctx, `(() => {
		const cell = document.querySelector('tr[data-combo="720p/1/1"] td[data-metric="ttft_p50"]');
		return {
			error: window.vlmfleetCompare.error || '',
			verdict: document.getElementById('verdict').textContent,
			cell: cell ? cell.textContent : '',
			cellVerdict: cell ? cell.dataset.verdict : 'none',
			words: String(document.querySelectorAll('#changes .word').length),
			runs: document.getElementById('runs').textContent,
		};
	})()`)
	if got["error"] != "" {
		t.Fatalf("compare page: %s", got["error"])
	}
	if !strings.HasPrefix(got["verdict"], "Not comparable as a regression: measured in MAXN and 15W.") {
		t.Errorf("verdict %q", got["verdict"])
	}
	if !strings.Contains(got["cell"], "0.25 s → 0.39 s") || got["cellVerdict"] != "" || got["words"] != "0" {
		t.Errorf("720p TTFT cell %q (verdict %q, %s verdict words), want the figures unjudged", got["cell"], got["cellVerdict"], got["words"])
	}
	if !strings.Contains(got["runs"], "MAXN") || !strings.Contains(got["runs"], "15W") {
		t.Errorf("runs %q, want each run's power mode", got["runs"])
	}
}

// The exported file, offline, shows each power mode with its device too.
func TestExportedFileShowsPowerModes(t *testing.T) {
	var buf bytes.Buffer
	if err := explorer.Export(&buf, explorer.Aggregate(powerModeRuns(), time.Now())); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "explorer.html")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := newTab(t)
	open(t, ctx, "file://"+path)
	var devices []string
	for _, r := range shownRows(t, ctx) {
		devices = append(devices, r.Device)
	}
	slices.Sort(devices)
	if want := []string{"Jetson AGX Orin · 15W", "Jetson AGX Orin · MAXN"}; !slices.Equal(devices, want) {
		t.Errorf("the exported file shows devices %q, want %q", devices, want)
	}
}

// The page's quantization and engine examples never pair rows of two
// power settings: what differs must be the quantization or the engine
// alone.
func TestComparisonPairKeepsToOnePowerSetting(t *testing.T) {
	ctx := newTab(t)
	open(t, ctx, serve(t, mustJSON(t, testDataset())))
	got := eval[[]string](t, ctx, `import('/static/logic.js').then(m => {
		const row = (quantization, power_mode) => ({model: 'M', device: 'Jetson Orin NX', engine: 'llama.cpp', quantization, power_mode});
		const show = (p) => p ? p.rows.map(r => r.quantization + '@' + (r.power_mode || '')).join(' ') : 'none';
		return [
			show(m.comparisonPair([row('Q8_0', '15W'), row('Q4_K_M', 'MAXN')], 'quantization')),
			show(m.comparisonPair([row('Q8_0', '15W'), row('Q4_K_M', '15W'), row('Q8_0', 'MAXN')], 'quantization')),
		];
	})`)
	if want := []string{"none", "Q4_K_M@15W Q8_0@15W"}; !slices.Equal(got, want) {
		t.Errorf("pairs %q, want %q", got, want)
	}
}
