package explorer

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
)

// TableOrders are the orders of the table by name: "max" (Max Cameras,
// highest first), "ttft", "tps" (highest first), "params" (fewest first),
// "model" and "device". Ties compare equal, so a stable sort keeps the
// dataset's order.
func TableOrders() map[string]func(a, b RowView) int {
	byModel := func(a, b RowView) int {
		return cmp.Or(strings.Compare(a.Model, b.Model), cmp.Compare(a.ParamsB, b.ParamsB), strings.Compare(a.Quantization, b.Quantization), strings.Compare(a.Engine, b.Engine))
	}
	return map[string]func(a, b RowView) int{
		"max": func(a, b RowView) int {
			return cmp.Or(cmp.Compare(b.MaxCameras, a.MaxCameras), cmpBool(b.Plus, a.Plus), cmp.Compare(ttftOrInf(a), ttftOrInf(b)), byModel(a, b))
		},
		"ttft": func(a, b RowView) int { return cmp.Or(cmp.Compare(ttftOrInf(a), ttftOrInf(b)), byModel(a, b)) },
		"tps":  func(a, b RowView) int { return cmp.Or(cmp.Compare(tpsOrZero(b), tpsOrZero(a)), byModel(a, b)) },
		"params": func(a, b RowView) int {
			return cmp.Or(cmp.Compare(a.ParamsB, b.ParamsB), byModel(a, b), strings.Compare(a.Device, b.Device))
		},
		"model":  func(a, b RowView) int { return cmp.Or(byModel(a, b), strings.Compare(a.Device, b.Device)) },
		"device": func(a, b RowView) int { return cmp.Or(strings.Compare(a.Device, b.Device), byModel(a, b)) },
	}
}

// ttftOrInf sorts a row without figures (every request failed) after the others.
func ttftOrInf(r RowView) float64 {
	if r.TTFT == nil {
		return math.Inf(1)
	}
	return *r.TTFT
}

// tpsOrZero sorts a row without figures after the others, highest first.
func tpsOrZero(r RowView) float64 {
	if r.TPS == nil {
		return -1
	}
	return *r.TPS
}

// Plural is "1 row", "2 rows".
func Plural(n int, word string) string { return plural(n, word) }

// WriteTable prints the rows aligned, as `vlmfleet explorer table` does:
// PASS/FAIL in words and simulated rows marked SIM.
func WriteTable(w io.Writer, res RowsResponse) error {
	view := fmt.Sprintf("%s, %s, %s, target %s s", res.Size, plural(res.Cameras, "camera"), plural(res.Images, "image")+" per camera", FormatSeconds(res.Target))
	if len(res.Rows) == 0 {
		_, err := fmt.Fprintf(w, "no configuration was measured at %s\n", view)
		return err
	}
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "MODEL\tPARAMS\tQUANT\tENGINE\tDEVICE\tTTFT\tTPS\tMAX CAMERAS\tRESULT\t")
	sim := 0
	for _, r := range res.Rows {
		params, result, mark := "", "FAIL", ""
		if r.ParamsB > 0 {
			params = FormatParams(r.ParamsB) + "B"
		}
		if r.Pass {
			result = "PASS"
		}
		if r.Simulated {
			mark = "SIM"
			sim++
		}
		ttft, tps := "all failed", "-"
		if !r.Measured {
			ttft, result = "not measured", "-"
		}
		if r.TTFT != nil && r.TPS != nil {
			// Fixed decimals in a column, so that figures line up and
			// read alike ("1.50 s" above "1.71 s").
			ttft, tps = fmt.Sprintf("%.2f s", RoundSeconds(*r.TTFT)), fmt.Sprintf("%.1f", math.Round(*r.TPS*10)/10)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Model, params, r.Quantization, r.Engine, r.Device,
			ttft, tps, r.MaxCamerasLabel, result, mark)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	// The SIM column is usually empty; its padding would leave trailing blanks.
	for _, line := range strings.SplitAfter(buf.String(), "\n") {
		if line != "" {
			fmt.Fprintln(w, strings.TrimRight(line, " \n"))
		}
	}
	// Why a row's requests all failed, which its "all failed" cannot say.
	for _, r := range res.Rows {
		if r.Measured && r.TTFT == nil {
			why := plural(r.Failed, "request") + " failed"
			if r.Error != "" {
				why += ": " + r.Error
			}
			fmt.Fprintf(w, "  %s (%s, %s) on %s: %s\n", r.Model, r.Quantization, r.Engine, r.Device, why)
		}
	}
	fmt.Fprintf(w, "%s at %s", plural(len(res.Rows), "row"), view)
	if sim > 0 {
		fmt.Fprintf(w, "; SIM: %d from simulated runs, not real hardware", sim)
	}
	_, err := fmt.Fprintln(w)
	return err
}
