package web_test

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestTargetRecoloursRowsAndChangesMaxCameras(t *testing.T) {
	ctx := newTab(t)
	open(t, ctx, serve(t, mustJSON(t, testDataset())))

	before := shownRows(t, ctx)
	edge := rowByID(t, before, "edge-agx")
	q8 := rowByID(t, before, "q8b-q8-agx")
	if edge.Max != "8+" || !strings.Contains(edge.Class, "pass") || edge.Result != "PASS" {
		t.Errorf("Cosmos3-Edge at 3 s: Max %q class %q result %q, want 8+, pass, PASS", edge.Max, edge.Class, edge.Result)
	}
	if q8.Max != "1" || q8.Result != "PASS" {
		t.Errorf("Qwen3-VL-8B Q8_0 at 3 s: Max %q result %q, want 1 PASS", q8.Max, q8.Result)
	}

	setInput(t, ctx, "#target-number", "1")
	after := shownRows(t, ctx)
	if !slices.Equal(ids(before), ids(after)) {
		t.Fatalf("the target changed the rows shown: %v -> %v", ids(before), ids(after))
	}
	edge = rowByID(t, after, "edge-agx")
	q8 = rowByID(t, after, "q8b-q8-agx")
	if edge.Max != "2" {
		t.Errorf("Cosmos3-Edge at a 1 s target: Max Cameras %q, want 2 (the seed's example)", edge.Max)
	}
	if q8.Max != "0" || q8.Result != "FAIL" || !strings.Contains(q8.Class, "fail") {
		t.Errorf("Qwen3-VL-8B Q8_0 at 1 s: Max %q result %q class %q, want 0 FAIL fail", q8.Max, q8.Result, q8.Class)
	}
	// The slider drives the same state.
	setInput(t, ctx, "#target-range", "2.7")
	if got := eval[string](t, ctx, `document.querySelector('#target-number').value`); got != "2.7" {
		t.Errorf("target number after slider = %q, want 2.7", got)
	}
	edge = rowByID(t, shownRows(t, ctx), "edge-agx")
	if edge.Max != "8+" {
		t.Errorf("Cosmos3-Edge at 2.7 s (exactly its 8-camera time): %q, want 8+ (exactly on the target passes)", edge.Max)
	}
}

func TestFiltersHideRows(t *testing.T) {
	ctx := newTab(t)
	open(t, ctx, serve(t, mustJSON(t, testDataset())))
	all := shownRows(t, ctx)
	if len(all) != len(testRows()) {
		t.Fatalf("default view shows %d rows, want %d", len(all), len(testRows()))
	}

	click(t, ctx, `#f-device input[value="Jetson AGX Orin"]`)
	rows := shownRows(t, ctx)
	if len(rows) != 3 {
		t.Fatalf("device filter AGX Orin: %d rows, want 3: %v", len(rows), ids(rows))
	}
	for _, r := range rows {
		if r.Device != "Jetson AGX Orin" {
			t.Errorf("device filter shows %s on %s", r.ID, r.Device)
		}
	}
	if got := eval[string](t, ctx, `document.querySelector('#count').textContent`); !strings.HasPrefix(got, "3 of 9 rows") {
		t.Errorf("count = %q, want it to start with 3 of 9 rows", got)
	}
	click(t, ctx, `#f-quant input[value="Q4_K_M"]`)
	if rows := shownRows(t, ctx); len(rows) != 1 || rows[0].ID != "q8b-q4-agx" {
		t.Errorf("device AGX + quant Q4_K_M: %v, want [q8b-q4-agx]", ids(rows))
	}
	// Nothing matches: the page says so and offers to clear.
	click(t, ctx, `#f-engine input[value="vLLM"]`)
	if rows := shownRows(t, ctx); len(rows) != 0 {
		t.Fatalf("AGX + Q4_K_M + vLLM: %v, want none", ids(rows))
	}
	if eval[bool](t, ctx, `document.querySelector('#empty').hidden`) {
		t.Error("no rows match but the empty notice is hidden")
	}
	click(t, ctx, "#clear-filters-empty")
	if rows := shownRows(t, ctx); len(rows) != len(all) {
		t.Errorf("after Clear filters: %d rows, want %d", len(rows), len(all))
	}

	// Response time at most 0.5 s (slider stop 1 of RT_STOPS).
	setInput(t, ctx, "#rt-range", "1")
	for _, r := range shownRows(t, ctx) {
		v, err := strconv.ParseFloat(r.RT, 64)
		if err != nil || v > 0.5 {
			t.Errorf("response-time filter 0.5 s shows %s at %q", r.ID, r.RT)
		}
	}
	if n := len(shownRows(t, ctx)); n != 4 {
		t.Errorf("response time ≤ 0.5 s: %d rows, want 4 (edge, two RTX Qwen, simulated)", n)
	}
	setInput(t, ctx, "#rt-range", "10") // any
	// Max Cameras at least 8 (stop index of 8 in [0,1,2,4,8,16]).
	setInput(t, ctx, "#mincam-range", "4")
	got := ids(shownRows(t, ctx))
	want := []string{"edge-agx", "q4b-vllm-rtx", "q4b-llama-rtx", "sim-rtx"}
	if !slices.Equal(got, want) {
		t.Errorf("Max Cameras ≥ 8: %v, want %v", got, want)
	}
	if txt := eval[string](t, ctx, `document.querySelector('#mincam-out').textContent`); txt != "8" {
		t.Errorf("minimum cameras output = %q, want 8", txt)
	}
	click(t, ctx, "#clear-filters")
	if rows := shownRows(t, ctx); len(rows) != len(all) {
		t.Errorf("after Clear filters: %d rows, want %d", len(rows), len(all))
	}
}

// sortKey turns a shown cell into something comparable; "—" sorts last.
func sortKey(r shownRow, col string) (s string, n float64, missing bool) {
	num := func(v string) (float64, bool) {
		v = strings.TrimSuffix(v, "B")
		plus := strings.HasSuffix(v, "+")
		f, err := strconv.ParseFloat(strings.TrimSuffix(v, "+"), 64)
		if plus {
			f += 0.5
		}
		return f, err == nil
	}
	switch col {
	case "model":
		return r.Model, 0, false
	case "quant":
		return r.Quant, 0, false
	case "engine":
		return r.Engine, 0, false
	case "device":
		return r.Device, 0, false
	case "result":
		switch r.Result {
		case "PASS":
			return "", 1, false
		case "FAIL":
			return "", 0, false
		}
		return "", 0, true
	}
	v := map[string]string{"params": r.Params, "rt": r.RT, "tps": r.TPS, "maxcams": r.Max}[col]
	f, ok := num(v)
	return "", f, !ok
}

func TestEveryColumnSorts(t *testing.T) {
	ctx := newTab(t)
	open(t, ctx, serve(t, mustJSON(t, testDataset())))
	setInput(t, ctx, "#target-number", "1") // a mix of PASS and FAIL
	for _, col := range []string{"model", "params", "quant", "engine", "device", "rt", "tps", "maxcams", "result"} {
		for range 2 {
			click(t, ctx, fmt.Sprintf(`#table th[data-key=%q] button`, col))
			dir := eval[string](t, ctx, fmt.Sprintf(`document.querySelector('#table th[data-key=%q]').getAttribute('aria-sort')`, col))
			if dir != "ascending" && dir != "descending" {
				t.Fatalf("%s: aria-sort %q after a click", col, dir)
			}
			others := eval[int](t, ctx, `[...document.querySelectorAll('#table th')].filter(th => th.getAttribute('aria-sort') !== 'none').length`)
			if others != 1 {
				t.Errorf("%s: %d headers carry a sort, want 1", col, others)
			}
			rows := shownRows(t, ctx)
			for i := 1; i < len(rows); i++ {
				as, an, am := sortKey(rows[i-1], col)
				bs, bn, bm := sortKey(rows[i], col)
				if am && !bm {
					t.Errorf("%s %s: a missing value sorts before %s", col, dir, rows[i].ID)
					continue
				}
				if am || bm {
					continue
				}
				c := strings.Compare(strings.ToLower(as), strings.ToLower(bs))
				if as == "" && bs == "" {
					c = map[bool]int{true: -1, false: 0}[an < bn]
					if an > bn {
						c = 1
					}
				}
				if (dir == "ascending" && c > 0) || (dir == "descending" && c < 0) {
					t.Errorf("%s %s: %s (%s%v) before %s (%s%v)", col, dir, rows[i-1].ID, as, an, rows[i].ID, bs, bn)
				}
			}
		}
	}
}

func TestCombinationWithoutDataIsDimmed(t *testing.T) {
	ctx := newTab(t)
	open(t, ctx, serve(t, mustJSON(t, testDataset())))
	type button struct {
		Value        string
		Disabled     bool
		AriaDisabled string
		Pressed      string
	}
	buttons := func(box string) map[string]button {
		list := eval[[]button](t, ctx, fmt.Sprintf(`[...document.querySelectorAll('#%s button')].map(b => ({Value: b.dataset.value, Disabled: b.disabled, AriaDisabled: b.getAttribute('aria-disabled') || '', Pressed: b.getAttribute('aria-pressed')}))`, box))
		m := map[string]button{}
		for _, b := range list {
			m[b.Value] = b
		}
		return m
	}
	if got := buttons("camera-buttons"); len(got) != 5 || got["16"].Disabled || got["1"].Pressed != "true" {
		t.Errorf("camera buttons at 720p: %+v, want 1 2 4 8 16 enabled, 1 pressed", got)
	}
	// Only RTX rows were measured with 16 cameras: the others are hidden.
	click(t, ctx, `#camera-buttons button[data-value="16"]`)
	for _, r := range shownRows(t, ctx) {
		if !strings.HasPrefix(r.Device, "RTX PRO 6000") || r.ID == "g31-maxq" {
			t.Errorf("16 cameras shows %s (%s), which was not measured with 16", r.ID, r.Device)
		}
	}
	// 2K was measured with one camera only: 2, 4, 8 and 16 are dimmed.
	click(t, ctx, `#size-buttons button[data-value="2K"]`)
	got := buttons("camera-buttons")
	for _, c := range []string{"2", "4", "8", "16"} {
		if !got[c].Disabled || got[c].AriaDisabled != "true" {
			t.Errorf("2K with %s cameras: %+v, want disabled and aria-disabled", c, got[c])
		}
	}
	if got["1"].Disabled || got["1"].Pressed != "true" {
		t.Errorf("2K with 1 camera: %+v, want enabled and pressed (read at 1 camera)", got["1"])
	}
	if eval[bool](t, ctx, `document.querySelector('#cam-note').hidden`) {
		t.Error("no note says the table is read at 1 camera")
	}
	if n := len(shownRows(t, ctx)); n != len(testRows()) {
		t.Errorf("2K: %d rows, want %d (every row was measured at 2K with 1 camera)", n, len(testRows()))
	}
	// Back at 720p the choice of 16 returns.
	click(t, ctx, `#size-buttons button[data-value="720p"]`)
	if got := buttons("camera-buttons"); got["16"].Pressed != "true" {
		t.Errorf("back at 720p: 16 cameras not pressed: %+v", got["16"])
	}
}

func TestImagesPerCameraCapsMaxCameras(t *testing.T) {
	ctx := newTab(t)
	open(t, ctx, serve(t, mustJSON(t, testDataset())))
	before := shownRows(t, ctx)
	for _, n := range []string{"3", "5"} {
		click(t, ctx, fmt.Sprintf(`#image-buttons button[data-value=%q]`, n))
		after := shownRows(t, ctx)
		if !slices.Equal(ids(before), ids(after)) {
			t.Errorf("%s images per camera changed the rows: %v -> %v", n, ids(before), ids(after))
		}
		for _, r := range after {
			if r.Max != "0" && r.Max != "1" && r.Max != "1+" {
				t.Errorf("%s images: %s Max Cameras %q, want at most 1", n, r.ID, r.Max)
			}
		}
		if b := rowByID(t, after, "edge-agx"); b.RT == rowByID(t, before, "edge-agx").RT {
			t.Errorf("%s images: Cosmos3-Edge response time unchanged at %s", n, b.RT)
		}
	}
}

// TestImagesPerCameraKeepsTheRowsAtSeveralCameras: the Cameras selector picks
// the rows whatever the image count; with 3 or 5 images only the figures
// move to the one camera that was measured with several images.
func TestImagesPerCameraKeepsTheRowsAtSeveralCameras(t *testing.T) {
	ctx := newTab(t)
	open(t, ctx, serve(t, mustJSON(t, testDataset())))
	click(t, ctx, `#camera-buttons button[data-value="8"]`)
	at8 := shownRows(t, ctx)
	if len(at8) == 0 || len(at8) == len(testRows()) {
		t.Fatalf("8 cameras at 720p shows %d of %d rows; the test needs some rows hidden", len(at8), len(testRows()))
	}
	pressed := func() string {
		return eval[string](t, ctx, `[...document.querySelectorAll('#camera-buttons [aria-pressed="true"]')].map(b => b.dataset.value).join(',')`)
	}
	for _, n := range []string{"3", "5", "1"} {
		click(t, ctx, fmt.Sprintf(`#image-buttons button[data-value=%q]`, n))
		got := shownRows(t, ctx)
		if !slices.Equal(ids(got), ids(at8)) {
			t.Errorf("8 cameras, %s images: rows %v, want those at one image %v", n, ids(got), ids(at8))
		}
		if p := pressed(); p != "8" {
			t.Errorf("8 cameras, %s images: cameras pressed %q, want 8", n, p)
		}
		note := eval[string](t, ctx, `document.querySelector('#cam-note').hidden ? '' : document.querySelector('#cam-note').textContent`)
		if n == "1" {
			if note != "" {
				t.Errorf("1 image at 8 cameras: note %q, want none", note)
			}
			continue
		}
		if !strings.Contains(note, "read at 1 camera") {
			t.Errorf("8 cameras, %s images: note %q does not say the figures are read at 1 camera", n, note)
		}
		for _, r := range got {
			if r.Max != "0" && r.Max != "1" && r.Max != "1+" {
				t.Errorf("%s images: %s Max Cameras %q, want at most 1", n, r.ID, r.Max)
			}
			if r.Result != "PASS" && r.Result != "FAIL" {
				t.Errorf("%s images: %s result %q, want read at 1 camera", n, r.ID, r.Result)
			}
		}
	}
}

func TestSimulatedBanner(t *testing.T) {
	ctx := newTab(t)
	open(t, ctx, serve(t, mustJSON(t, testDataset())))
	if eval[bool](t, ctx, `document.querySelector('#sim-banner').hidden`) {
		t.Fatal("a simulated row is shown but the banner is hidden")
	}
	if txt := eval[string](t, ctx, `document.querySelector('#sim-banner').textContent`); !strings.Contains(txt, "1 of the 9 rows shown comes from simulated runs") {
		t.Errorf("banner = %q", txt)
	}
	for _, r := range shownRows(t, ctx) {
		if r.Simulated != (r.ID == "sim-rtx") {
			t.Errorf("%s: SIMULATED badge %v", r.ID, r.Simulated)
		}
	}
	click(t, ctx, `#f-device input[value="Jetson AGX Orin"]`)
	if !eval[bool](t, ctx, `document.querySelector('#sim-banner').hidden`) {
		t.Error("no simulated row is shown but the banner is visible")
	}
}

func TestWhereToStartPresets(t *testing.T) {
	ctx := newTab(t)
	open(t, ctx, serve(t, mustJSON(t, testDataset())))
	click(t, ctx, `button.preset[data-preset="agx"]`)
	rows := shownRows(t, ctx)
	if got := ids(rows); !slices.Equal(got, []string{"edge-agx", "q8b-q8-agx", "q8b-q4-agx"}) {
		t.Errorf("AGX Orin preset: %v, want the three AGX rows by Max Cameras", got)
	}
	if s := eval[string](t, ctx, `document.querySelector('#table th[data-key="maxcams"]').getAttribute('aria-sort')`); s != "descending" {
		t.Errorf("AGX Orin preset sorts %q by Max Cameras", s)
	}
	if f := eval[string](t, ctx, `document.activeElement.id`); f != "mincam-range" {
		t.Errorf("AGX Orin preset focuses %q, want the minimum cameras slider", f)
	}
	click(t, ctx, `a.preset[data-preset="quant"]`)
	if got := ids(shownRows(t, ctx)); !slices.Equal(got, []string{"q8b-q4-agx", "q8b-q8-agx"}) {
		t.Errorf("quantization preset: %v, want Qwen3-VL-8B at Q4_K_M and Q8_0 on AGX Orin", got)
	}
	click(t, ctx, `a.preset[data-preset="engine"]`)
	if got := ids(shownRows(t, ctx)); !slices.Equal(got, []string{"q4b-llama-rtx", "q4b-vllm-rtx"}) {
		t.Errorf("engine preset: %v, want Qwen3-VL-4B under llama.cpp and vLLM on RTX PRO 6000", got)
	}
	click(t, ctx, `button.preset[data-preset="1080p"]`)
	if p := eval[string](t, ctx, `document.querySelector('#size-buttons [aria-pressed="true"]').textContent`); p != "1080p" {
		t.Errorf("1080p preset: size %q", p)
	}
	click(t, ctx, `button.preset[data-preset="own"]`)
	if n := len(shownRows(t, ctx)); n != len(testRows()) {
		t.Errorf("own-hardware preset: %d rows, want all %d before a device is picked", n, len(testRows()))
	}
	if f := eval[string](t, ctx, `document.activeElement.closest('fieldset') ? document.activeElement.closest('fieldset').id : ''`); f != "f-device" {
		t.Errorf("own-hardware preset focuses %q, want the device filter", f)
	}
}

func TestCSVHasTheRowsShown(t *testing.T) {
	ctx := newTab(t)
	open(t, ctx, serve(t, mustJSON(t, testDataset())))
	click(t, ctx, `#f-engine input[value="vLLM"]`)
	click(t, ctx, `#table th[data-key="rt"] button`)
	want := shownRows(t, ctx)
	recs, err := csv.NewReader(bytes.NewReader(downloadBytes(t, ctx, "#csv"))).ReadAll()
	if err != nil {
		t.Fatalf("CSV: %v", err)
	}
	if len(recs) != len(want)+1 || recs[0][0] != "model" {
		t.Fatalf("CSV has %d records for %d rows: %v", len(recs), len(want), recs)
	}
	for i, r := range want {
		rec := recs[i+1]
		if rec[0] != r.Model || rec[4] != r.Device || rec[10] != r.RT || rec[12] != r.Max || rec[13] != r.Result {
			t.Errorf("CSV record %d = %v, row shows %+v", i, rec, r)
		}
	}
}

func TestEmptyDatasetSaysSo(t *testing.T) {
	ctx := newTab(t)
	open(t, ctx, serve(t, []byte(`{"schema":1,"generated":"2026-03-02T00:00:00Z","sizes":null,"simulated_rows":0,"rows":null}`)))
	if txt := eval[string](t, ctx, `document.querySelector('#empty').hidden ? '' : document.querySelector('#empty-text').textContent`); !strings.HasPrefix(txt, "No results yet") {
		t.Errorf("empty dataset: %q", txt)
	}
}
