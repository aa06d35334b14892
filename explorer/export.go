package explorer

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/vlmfleet/vlmfleet/explorer/web"
	"github.com/vlmfleet/vlmfleet/internal/atomicfile"
)

// Export writes the explorer page with ds inside: one self-contained HTML
// file that works offline.
func Export(w io.Writer, ds Dataset) error {
	// A regression marker links the compare page, which needs a controller
	// and its per-request records; the offline file has neither.
	rows := make([]Row, len(ds.Rows))
	copy(rows, ds.Rows)
	for i := range rows {
		rows[i].Regression = nil
	}
	ds.Rows = rows
	data, err := json.Marshal(ds)
	if err != nil {
		return fmt.Errorf("encoding the dataset: %w", err)
	}
	if err := web.Export(w, data); err != nil {
		return fmt.Errorf("writing the page: %w", err)
	}
	return nil
}

// ExportFile writes the page to path, whole or not at all, and returns
// its size.
func ExportFile(path string, ds Dataset) (int64, error) {
	return atomicfile.Write(path, 0o644, func(w io.Writer) error { return Export(w, ds) })
}
