package explorer

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/vlmfleet/vlmfleet/explorer/web"
	"github.com/vlmfleet/vlmfleet/protocol"
)

func TestWriteTable(t *testing.T) {
	real, sim := testRun("real", 0, protocol.RunCompleted, 1.2), testRun("sim", 0, protocol.RunCompleted, 0.5)
	sim.Simulated, sim.Config.Model = true, "Fast-VL"
	res := Select(Aggregate([]protocol.Run{real, sim}, t0), DefaultQuery())
	slices.SortStableFunc(res.Rows, TableOrders()["max"])
	var b bytes.Buffer
	if err := WriteTable(&b, res); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "MODEL") || !strings.HasPrefix(lines[1], "Fast-VL") || !strings.HasSuffix(lines[1], "PASS    SIM") {
		t.Fatalf("table:\n%s", b.String())
	}
	if want := "2 rows at 720p, 1 camera, 1 image per camera, target 3 s; SIM: 1 from simulated runs, not real hardware"; lines[3] != want {
		t.Errorf("footer %q, want %q", lines[3], want)
	}
	for _, l := range lines {
		if strings.HasSuffix(l, " ") {
			t.Errorf("trailing blank: %q", l)
		}
	}
	b.Reset()
	res.Rows = nil
	if err := WriteTable(&b, res); err != nil || b.String() != "no configuration was measured at 720p, 1 camera, 1 image per camera, target 3 s\n" {
		t.Errorf("empty table %q, %v", b.String(), err)
	}
}

func TestTableOrdersKeepTiesInPlace(t *testing.T) {
	rows := []RowView{{RowConfig: RowConfig{ID: "b", Model: "M"}}, {RowConfig: RowConfig{ID: "a", Model: "M"}}}
	for name, less := range TableOrders() {
		got := slices.Clone(rows)
		slices.SortStableFunc(got, less)
		if got[0].ID != "b" {
			t.Errorf("%s: ties reordered", name)
		}
	}
}

func TestExportIsTheWebPageWithTheDataset(t *testing.T) {
	ds := Aggregate([]protocol.Run{testRun("a", 0, protocol.RunCompleted, 1)}, t0)
	var got, want bytes.Buffer
	if err := Export(&got, ds); err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(ds)
	if err := web.Export(&want, data); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want.Bytes()) {
		t.Error("Export differs from web.Export of the dataset JSON")
	}
	dir := t.TempDir()
	n, err := ExportFile(filepath.Join(dir, "x.html"), ds)
	if err != nil || n != int64(want.Len()) {
		t.Fatalf("ExportFile: %d bytes, %v; want %d", n, err, want.Len())
	}
	if _, err := ExportFile(filepath.Join(dir, "no", "x.html"), ds); err == nil || !strings.Contains(err.Error(), "x.html") {
		t.Errorf("missing directory: %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("%d files, want only x.html (no temporary left)", len(entries))
	}
}
