package explorer

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"

	"github.com/vlmfleet/vlmfleet/protocol"
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
// PASS/FAIL in words and simulated rows marked SIM; no power columns.
func WriteTable(w io.Writer, res RowsResponse) error {
	return WriteTableWith(w, res, TableOptions{Cost: DefaultCost})
}

// WriteTableWith is WriteTable with the power columns when opt.Power says.
func WriteTableWith(w io.Writer, res RowsResponse, opt TableOptions) error {
	view := tableView(res.Query)
	if len(res.Rows) == 0 {
		_, err := fmt.Fprintf(w, "no configuration was measured at %s\n", view)
		return err
	}
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
	ttftHead := "TTFT"
	if st := res.Judgement().Stat(); st != protocol.StatisticMean {
		ttftHead = "TTFT " + strings.ToUpper(st)
	}
	fmt.Fprintln(tw, "MODEL\tPARAMS\tQUANT\tENGINE\tDEVICE\t"+ttftHead+"\tTPS\tMAX CAMERAS\tRESULT\t"+opt.powerHeads())
	sim := 0
	for _, r := range res.Rows {
		params, mark := "", ""
		if r.ParamsB > 0 {
			params = FormatParams(r.ParamsB) + "B"
		}
		if r.Simulated {
			mark = "SIM"
			sim++
		}
		ttft, tps, result := tableFigures(r, res.Judgement().Stat())
		maxCams := r.MaxCamerasLabel
		if r.Sustained {
			// Read from levels whose cameras kept sending; a row without
			// the mark reads one round per level, as published.
			maxCams += " sustained"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s%s\n", r.Model, params, r.Quantization, r.Engine, DeviceLabel(r.RowConfig),
			ttft, tps, maxCams, result, opt.powerCells(r), mark)
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
	writeTableNotes(w, res)
	if opt.Power && len(opt.Cost.DevicePrices) > 0 {
		fmt.Fprintln(w, opt.Cost.PricesText())
	}
	fmt.Fprintf(w, "%s at %s", plural(len(res.Rows), "row"), view)
	if sim > 0 {
		fmt.Fprintf(w, "; SIM: %d from simulated runs, not real hardware", sim)
	}
	_, err := fmt.Fprintln(w)
	return err
}

// tableView says what the table is read at: "720p, 1 camera, 1 image per
// camera, target 3 s", then the frame clock and the statistic where they
// are not the published ones.
func tableView(q Query) string {
	view := fmt.Sprintf("%s, %s, %s, target %s s", q.Size, plural(q.Cameras, "camera"), plural(q.Images, "image")+" per camera", FormatSeconds(q.Target))
	if q.Interval > 0 {
		view += ", one frame every " + FormatInterval(q.Interval) + " s per camera"
	}
	if st := q.Judgement().Stat(); st != protocol.StatisticMean {
		view += ", judged by " + st
	}
	return view
}

// tableFigures is a row's response time (the statistic's), TPS and result
// as the table writes them.
func tableFigures(r RowView, stat string) (ttft, tps, result string) {
	ttft, tps, result = "all failed", "-", "FAIL"
	switch {
	case !r.Measured:
		return "not measured", tps, "-"
	case r.NotJudged:
		result = "n/a"
	case r.Pass:
		result = "PASS"
	}
	if r.TTFT == nil || r.TPS == nil {
		return ttft, tps, result
	}
	// Fixed decimals in a column, so that figures line up and read alike
	// ("1.50 s" above "1.71 s").
	ttft, tps = fmt.Sprintf("%.2f s", RoundSeconds(*r.TTFT)), fmt.Sprintf("%.1f", math.Round(*r.TPS*10)/10)
	if r.TPSUnmeasured {
		tps = "n/a"
	}
	switch {
	case stat == protocol.StatisticMean:
	case r.NotJudged:
		ttft = "n/a"
	case r.Judged != nil:
		ttft = fmt.Sprintf("%.2f s", RoundSeconds(*r.Judged))
	default:
		ttft = "not started"
	}
	return ttft, tps, result
}

// writeTableNotes says what a row's cells cannot: why its requests all
// failed, that its statistic is not known, that it dropped frames.
func writeTableNotes(w io.Writer, res RowsResponse) {
	for _, r := range res.Rows {
		var why string
		switch {
		case r.Measured && r.TTFT == nil:
			why = plural(r.Failed, "request") + " failed"
			if r.Error != "" {
				why += ": " + r.Error
			}
		case r.NotJudged:
			why = res.Judgement().Stat() + " n/a: published with means only"
		case r.FramesDropped > 0:
			why = itoa(r.FramesDropped) + " of " + plural(r.FramesDue, "frame") + " dropped"
		default:
			continue
		}
		fmt.Fprintf(w, "  %s (%s, %s) on %s: %s\n", r.Model, r.Quantization, r.Engine, DeviceLabel(r.RowConfig), why)
	}
}
