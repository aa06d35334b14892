package devicefacts

import (
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// docs/engines.md's "Simulated power modes" tables are the code's: every
// simulated Jetson's modes and every simulated GPU's limits, figure for
// figure, so that neither can change without the other.
func TestSimPowerDocsTable(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "engines.md"))
	if err != nil {
		t.Fatal(err)
	}
	section := docSection(t, string(doc), "#### Simulated power modes")
	gotModes := map[SimProfile][]SimMode{}
	gotLimits := map[SimProfile]SimGPULimits{}
	for _, part := range strings.Split(section, "\n##### ")[1:] {
		heading, body, _ := strings.Cut(part, "\n")
		rows := tableRows(body)
		if strings.HasPrefix(heading, "RTX PRO 6000 power limits") {
			for _, r := range rows {
				gotLimits[SimProfileFor(r[0])] = SimGPULimits{DefaultW: docFigure(t, r[1]), MaxW: docFigure(t, r[2]), MinW: docFigure(t, r[3])}
			}
			continue
		}
		dev, _, _ := strings.Cut(heading, " (")
		for _, r := range rows {
			gotModes[SimProfileFor(dev)] = append(gotModes[SimProfileFor(dev)], SimMode{
				ID: int(docFigure(t, r[0])), Name: r[1], BudgetW: docFigure(t, r[2]),
				GPUMaxFreqHz: int64(docFigure(t, r[3])) * mhz, GPUTPCs: int(docFigure(t, r[4])), EMCMaxFreqHz: int64(docFigure(t, r[5])) * mhz,
			})
		}
	}
	wantModes := map[SimProfile][]SimMode{}
	for p, tab := range simModeTables() {
		wantModes[p] = tab.Modes
	}
	if !reflect.DeepEqual(gotModes, wantModes) {
		t.Errorf("docs/engines.md's modes:\n%+v\nthe code's:\n%+v", gotModes, wantModes)
	}
	if !reflect.DeepEqual(gotLimits, simGPULimits()) {
		t.Errorf("docs/engines.md's GPU limits %+v, the code's %+v", gotLimits, simGPULimits())
	}
}

// docSection is the text from heading to the next heading of level 2.
func docSection(t *testing.T, doc, heading string) string {
	t.Helper()
	_, rest, ok := strings.Cut(doc, "\n"+heading+"\n")
	if !ok {
		t.Fatalf("docs/engines.md has no %q", heading)
	}
	if i := strings.Index(rest, "\n## "); i >= 0 {
		rest = rest[:i]
	}
	return rest
}

// tableRows are a markdown table's body rows, cells trimmed, without the
// header and its rule.
func tableRows(text string) [][]string {
	var rows [][]string
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, "|") {
			continue
		}
		var cells []string
		for _, c := range strings.Split(strings.Trim(line, "|"), "|") {
			cells = append(cells, strings.TrimSpace(c))
		}
		rows = append(rows, cells)
	}
	if len(rows) < 2 {
		return nil
	}
	return rows[2:]
}

// docFigure reads a table's figure; "none" and "—" are 0.
func docFigure(t *testing.T, s string) float64 {
	t.Helper()
	if s == "none" || s == "—" {
		return 0
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("docs/engines.md: figure %q: %v", s, err)
	}
	return v
}
