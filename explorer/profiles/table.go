package profiles

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// config is a model on a GPU at a precision and TP: the page's heading
// above its two tables.
type config struct {
	model, gpu, precision string
	tp                    int
}

type configTables struct {
	config
	minLatency, maxThroughput []Line
}

// groupLines orders lines as the page does (model → GPU → precision → TP,
// each in order of first appearance), each config with its two tables.
func groupLines(lines []Line) []*configTables {
	var out []*configTables
	at := map[config]*configTables{}
	for _, l := range lines {
		r := l.Published
		if r == nil {
			r = l.Measured
		}
		c := config{r.Model, r.GPU, r.Precision, r.TP}
		g := at[c]
		if g == nil {
			g = &configTables{config: c}
			at[c] = g
			out = append(out, g)
		}
		if r.Profile == protocol.ProfileMinLatency {
			g.minLatency = append(g.minLatency, l)
		} else {
			g.maxThroughput = append(g.maxThroughput, l)
		}
	}
	// Under one heading each: a config measured only, listed after the
	// published ones, joins its model's and GPU's headings.
	rank := map[string]int{}
	first := func(parts ...string) int {
		k := strings.Join(parts, "\x00")
		if _, ok := rank[k]; !ok {
			rank[k] = len(rank)
		}
		return rank[k]
	}
	type order struct{ model, gpu, precision, tp int }
	orders := map[*configTables]order{}
	for _, g := range out {
		orders[g] = order{first(g.model), first(g.model, g.gpu), first(g.model, g.gpu, g.precision), g.tp}
	}
	slices.SortStableFunc(out, func(a, b *configTables) int {
		x, y := orders[a], orders[b]
		return cmp.Or(cmp.Compare(x.model, y.model), cmp.Compare(x.gpu, y.gpu), cmp.Compare(x.precision, y.precision), cmp.Compare(x.tp, y.tp))
	})
	return out
}

// WriteTables writes rows laid out like the published page: model, GPU,
// precision and TP as headings, then the Min Latency and Max Throughput
// tables. A measured line sits under the published line of its
// identity, with the table's defining figure against it in percent.
func WriteTables(w io.Writer, rows []protocol.ProfileRow) error {
	var published, measured []protocol.ProfileRow
	for _, r := range rows {
		if r.Source == protocol.ProfileSourcePublished {
			published = append(published, r)
		} else {
			measured = append(measured, r)
		}
	}
	if len(rows) == 0 {
		_, err := fmt.Fprintln(w, "no lines")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	var last config
	for i, g := range groupLines(Join(published, measured)) {
		if i > 0 {
			fmt.Fprintln(tw)
		}
		writeHeadings(tw, last, g.config)
		last = g.config
		if len(g.minLatency) > 0 {
			writeTable(tw, protocol.ProfileMinLatency, g.minLatency)
		}
		if len(g.maxThroughput) > 0 {
			writeTable(tw, protocol.ProfileMaxThroughput, g.maxThroughput)
		}
	}
	return tw.Flush()
}

// writeHeadings writes the headings of c that differ from the previous config's.
func writeHeadings(w io.Writer, prev, c config) {
	same := prev.model == c.model
	if !same {
		fmt.Fprintf(w, "%s\n", c.model)
	}
	same = same && prev.gpu == c.gpu
	if !same {
		fmt.Fprintf(w, "  %s\n", c.gpu)
	}
	same = same && prev.precision == c.precision
	if !same {
		fmt.Fprintf(w, "    %s\n", c.precision)
	}
	fmt.Fprintf(w, "      TP%d\n", c.tp)
}

// column is one of a table's columns: shown where any row has it.
type column struct {
	title string
	cell  func(protocol.ProfileRow) string
}

var tableColumns = []column{
	{"ISL", func(r protocol.ProfileRow) string { return optInt(r.ISL) }},
	{"OSL", func(r protocol.ProfileRow) string { return strconv.Itoa(r.OSL) }},
	{"Image Size (width x height in px)", func(r protocol.ProfileRow) string { return fmt.Sprintf("%dx%d", r.Width, r.Height) }},
	{"Concurrency", func(r protocol.ProfileRow) string { return optInt(r.Concurrency) }},
	{"Avg TTFT (msec)", func(r protocol.ProfileRow) string { return optFloat(r.TTFTMs, 0) }},
	{"Avg ITL (msec)", func(r protocol.ProfileRow) string { return optFloat(r.ITLMs, 1) }},
	{"Avg Request Latency (msec)", func(r protocol.ProfileRow) string { return optFloat(r.RequestLatencyMs, 0) }},
	{"Request Throughput (reqs/sec)", func(r protocol.ProfileRow) string { return optFloat(r.RequestThroughput, 2) }},
	{"Output Tokens/sec", func(r protocol.ProfileRow) string { return optFloat(r.OutputTokensPerSec, 1) }},
}

// tableTitles are the tables' titles, with the concurrency each is measured at.
var tableTitles = map[string]string{
	protocol.ProfileMinLatency:    "Min Latency (concurrency 1)",
	protocol.ProfileMaxThroughput: "Max Throughput (at the concurrency that saturates the throughput)",
}

func writeTable(w io.Writer, profile string, lines []Line) {
	var rows []protocol.ProfileRow
	var diffs []string
	for _, l := range lines {
		if l.Published != nil {
			rows, diffs = append(rows, *l.Published), append(diffs, "")
		}
		if l.Measured != nil {
			rows, diffs = append(rows, *l.Measured), append(diffs, diffText(l))
		}
	}
	var cols []column
	for _, c := range tableColumns {
		// The concurrency of a Min Latency table is its title's.
		if c.title == "Concurrency" && profile == protocol.ProfileMinLatency {
			continue
		}
		for _, r := range rows {
			if c.cell(r) != "" {
				cols = append(cols, c)
				break
			}
		}
	}
	withDiff := slices.ContainsFunc(diffs, func(d string) bool { return d != "" })
	const indent = "        "
	fmt.Fprintf(w, "\n%s%s\n%s", indent, tableTitles[profile], indent)
	for _, c := range cols {
		fmt.Fprintf(w, "%s\t", c.title)
	}
	if withDiff {
		fmt.Fprint(w, "Source\tvs published\n")
	} else {
		fmt.Fprint(w, "Source\n")
	}
	for i, r := range rows {
		fmt.Fprint(w, indent)
		for _, c := range cols {
			fmt.Fprintf(w, "%s\t", dash(c.cell(r)))
		}
		if diffs[i] != "" {
			fmt.Fprintf(w, "%s\t%s\n", sourceText(r), diffs[i])
		} else {
			fmt.Fprintf(w, "%s\n", sourceText(r))
		}
	}
}

// diffText is the table's defining figure of the measured line against
// the published one: the latency at min latency, the throughput at max.
func diffText(l Line) string {
	d := l.Diff()
	v, what := d.RequestLatency, "latency"
	if l.Key.Profile == protocol.ProfileMaxThroughput {
		v, what = d.RequestThroughput, "throughput"
	}
	if v == nil {
		return ""
	}
	return fmt.Sprintf("%+.1f %% %s", *v, what)
}

// sourceText is where a line comes from: a published line's note stands
// for its source, a measured line's follows it. SIMULATED and "OSL not
// held" are said once, by the note or after it.
func sourceText(r protocol.ProfileRow) string {
	s := r.Source
	switch {
	case r.Note != "" && r.Source == protocol.ProfileSourcePublished:
		s = r.Note
	case r.Note != "":
		s += " (" + r.Note + ")"
	}
	if r.Simulated && !strings.Contains(s, "SIMULATED") {
		s += ", SIMULATED"
	}
	if r.OSLHeld != nil && !*r.OSLHeld && !strings.Contains(s, "OSL not held") {
		s += ", OSL not held"
	}
	return s
}

func optInt(v *int) string {
	if v == nil {
		return ""
	}
	return strconv.Itoa(*v)
}

func optFloat(v *float64, decimals int) string {
	if v == nil {
		return ""
	}
	return strconv.FormatFloat(*v, 'f', decimals, 64)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return strings.TrimSpace(s)
}
