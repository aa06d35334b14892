package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/vlmfleet/vlmfleet/controller/client"
	"github.com/vlmfleet/vlmfleet/explorer"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// resultsDiff prints the controller's comparison of two runs.
func resultsDiff(ctx context.Context, c *cli, args []string) error {
	fs := newFlagSet(c, "results diff")
	controller := fs.String("controller", "", "controller URL (default $"+client.EnvURL+", else "+client.DefaultURL+")")
	tokenFile := tokenFileFlag(fs)
	asJSON := fs.Bool("json", false, "print the comparison as GET "+explorer.PathCompare+" answers it")
	failOnWorse := fs.Bool("fail-on-worse", false, "exit 1 when B is worse than A in any figure (for scripts and CI)")
	ids, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(ids) != 2 {
		return usageError{fmt.Errorf("want two run ids, A (before) and B (after); got %d", len(ids))}
	}
	cl, err := newClient(c, *controller, *tokenFile)
	if err != nil {
		return err
	}
	cmp, err := cl.Compare(ctx, ids[0], ids[1])
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(c.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(cmp); err != nil {
			return fmt.Errorf("write the comparison: %w", err)
		}
	} else {
		printComparison(c.stdout, cmp)
	}
	if *failOnWorse && cmp.Verdict == explorer.VerdictWorse {
		return fmt.Errorf("run %s is worse than run %s in %d figures (--fail-on-worse)", cmp.B.ID, cmp.A.ID, cmp.Worse)
	}
	return nil
}

func printComparison(w io.Writer, cmp explorer.Comparison) {
	cfg := cmp.Config
	sim := ""
	if cmp.Simulated {
		sim = " (simulated)"
	}
	fmt.Fprintf(w, "%s %sB %s · %s · %s%s\n", cfg.Model, explorer.FormatParams(cfg.ParamsB), cfg.Quantization, cfg.Engine, cfg.Device, sim)
	for _, side := range []struct {
		name string
		m    explorer.RunMeta
	}{{"A", cmp.A}, {"B", cmp.B}} {
		parts := []string{side.m.ID, side.m.Date.UTC().Format("2006-01-02 15:04 UTC")}
		for _, p := range []string{side.m.EngineVersion, side.m.Platform, side.m.PowerMode} {
			if p != "" {
				parts = append(parts, p)
			}
		}
		fmt.Fprintf(w, "%s  %s\n", side.name, strings.Join(parts, " · "))
	}
	if cmp.NotARegression != "" {
		// Two power settings: the figures side by side, no verdict.
		fmt.Fprintf(w, "\nB against A: %s\n\n", cmp.NotARegression)
	} else {
		fmt.Fprintf(w, "\nB against A: %s (%d worse, %d better)\n\n", cmp.Verdict, cmp.Worse, cmp.Better)
	}
	printChanges(w, cmp.Combos)
	for _, only := range []struct {
		side string
		keys []string
	}{{"A", keyNames(cmp.OnlyA)}, {"B", keyNames(cmp.OnlyB)}} {
		if len(only.keys) > 0 {
			fmt.Fprintf(w, "\nmeasured in %s only: %s\n", only.side, strings.Join(only.keys, "; "))
		}
	}
	for _, warn := range cmp.Warnings {
		fmt.Fprintf(w, "\nwarning: %s\n", warn)
	}
	fmt.Fprintf(w, "\nrule: %s\n", cmp.Rule)
}

// printChanges prints a line per combination, its load (a back-to-back
// level's: "sustained" or "one round, as published"), then a column per
// metric: the metrics of every combination, so that a paced level's
// dropped frames have their column and a back-to-back level leaves it
// empty. Why a figure was not compared is said under the table, once per
// combination and reason: in its cell it would widen every column.
func printChanges(w io.Writer, combos []explorer.ComboChange) {
	var keys, labels []string
	for _, cc := range combos {
		for _, m := range cc.Metrics {
			if !slices.Contains(keys, m.Metric) {
				keys, labels = append(keys, m.Metric), append(labels, m.Label)
			}
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(append([]string{"combination", "load"}, labels...), "\t")+"\t")
	for _, cc := range combos {
		name := comboName(cc.ComboKey)
		if cc.SearchA || cc.SearchB {
			name += " (search)"
		}
		cells := []string{name, cc.LoadName()}
		for _, k := range keys {
			cell := ""
			for _, m := range cc.Metrics {
				if m.Metric == k {
					cell = metricCell(m)
				}
			}
			cells = append(cells, cell)
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
	}
	_ = tw.Flush()
	for _, line := range notCompared(combos) {
		fmt.Fprintln(w, line)
	}
}

// notCompared says, for each combination with a figure not compared, why:
// "720p 1 img 4 cam: not compared: 3 requests in A, 1 in B; each side
// needs at least 3", once per distinct reason (frames count apart from
// requests).
func notCompared(combos []explorer.ComboChange) []string {
	var out []string
	for _, cc := range combos {
		var seen []string
		for _, m := range cc.Metrics {
			if m.Verdict != explorer.VerdictUnknown {
				continue
			}
			if why := explorer.NotComparedText(m); !slices.Contains(seen, why) {
				seen = append(seen, why)
				out = append(out, comboName(cc.ComboKey)+": "+why)
			}
		}
	}
	return out
}

// metricCell: "0.25 → 0.38 s +52% worse"; a figure that could not be
// compared says so (and notCompared why).
func metricCell(m explorer.MetricChange) string {
	if m.Verdict == explorer.VerdictUnknown {
		return "not compared"
	}
	var s string
	switch m.Metric {
	case "success", "dropped":
		s = fmt.Sprintf("%.0f → %.0f%% %s pt", m.A, m.B, signed(m.Change))
	case "tps_p50":
		s = fmt.Sprintf("%s → %s %s %s%%", explorer.FormatTPS(m.A), explorer.FormatTPS(m.B), m.Unit, signed(m.RelChange*100))
	default:
		s = fmt.Sprintf("%s → %s %s %s%%", explorer.FormatSeconds(m.A), explorer.FormatSeconds(m.B), m.Unit, signed(m.RelChange*100))
	}
	if m.Verdict != explorer.VerdictSame && m.Verdict != "" {
		s += " " + m.Verdict
	}
	return s
}

// signed is v rounded to a whole number with its sign, "+0" for no change
// (never "-0").
func signed(v float64) string {
	r := math.Round(v)
	if r == 0 {
		return "+0"
	}
	return fmt.Sprintf("%+.0f", r)
}

// comboName: "720p 1 img 4 cam", and "720p 1 img 4 cam every 5 s" on a
// frame clock.
func comboName(k protocol.ComboKey) string {
	s := fmt.Sprintf("%s %d img %d cam", k.Size, k.Images, k.Cameras)
	if k.Paced() {
		s += " every " + explorer.FormatInterval(k.FrameIntervalSec) + " s"
	}
	return s
}

// keyNames names combinations measured in one run only, a sustained
// level marked so.
func keyNames(keys []protocol.ComboKey) []string {
	var out []string
	for _, k := range keys {
		name := comboName(k)
		if k.Sustained() {
			name += " sustained"
		}
		out = append(out, name)
	}
	return out
}
