package explorer

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// WriteAnswer prints the table at q, sorted by Max Cameras, and each row's
// explanation: the answer as the explorer gives it, for a terminal.
func WriteAnswer(w io.Writer, ds Dataset, q Query) error {
	res := Select(ds, q)
	slices.SortStableFunc(res.Rows, TableOrders()["max"])
	if err := WriteTable(w, res); err != nil {
		return err
	}
	for _, r := range res.Rows {
		if len(r.Explanation) > 0 {
			if _, err := fmt.Fprintf(w, "\n%s\n", strings.Join(r.Explanation, "\n")); err != nil {
				return err
			}
		}
	}
	return nil
}
