package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"

	"github.com/vlmfleet/vlmfleet/controller/client"
	"github.com/vlmfleet/vlmfleet/explorer"
	"github.com/vlmfleet/vlmfleet/internal/atomicfile"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// resultsExport writes a controller's runs as CSV (one line per
// combination, the columns of `bench --csv` after the run's ids) or as a
// JSON array of whole result documents, which `results import` reads back.
func resultsExport(ctx context.Context, c *cli, args []string) error {
	fs := newFlagSet(c, "results export")
	cf := addControllerFlags(fs)
	format := fs.String("format", "", "csv (one line per combination) or json (an array of result documents) (required)")
	out := fs.String("out", "-", "the `FILE` to write, whole or not at all ('-': standard output)")
	var f client.RunFilter
	fs.StringVar(&f.Sweep, "sweep", "", "only the runs of this sweep id")
	fs.StringVar(&f.Agent, "agent", "", "only the runs of this agent id")
	fs.StringVar(&f.Status, "status", "", "only the runs with this status: completed, failed or cancelled")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return usageError{fmt.Errorf("unexpected argument %q", fs.Arg(0))}
	case *format == "":
		return usageError{fmt.Errorf("--format is required: csv or json")}
	case *format != "csv" && *format != "json":
		return usageError{fmt.Errorf("--format %q: want csv or json", *format)}
	}
	cl, err := cf.client(c)
	if err != nil {
		return err
	}
	runs, err := cl.Runs(ctx, f)
	if err != nil {
		return err
	}
	if len(runs) == 0 {
		// Said on stderr: standard output stays an empty, valid export.
		fmt.Fprintf(c.stderr, "no run at %s matches\n", cl.URL())
	}
	write := func(w io.Writer) error { return writeRunsCSV(w, runs) }
	if *format == "json" {
		// The list leaves out the per-request records; a document to import
		// elsewhere is the whole run.
		for i := range runs {
			if runs[i], err = cl.Run(ctx, runs[i].ID); err != nil {
				return err
			}
		}
		write = func(w io.Writer) error {
			enc := json.NewEncoder(w)
			enc.SetIndent("", "  ")
			return enc.Encode(runs)
		}
	}
	if *out == "-" {
		return write(c.stdout)
	}
	if _, err := atomicfile.Write(*out, 0o644, write); err != nil {
		return fmt.Errorf("--out %s: %w", *out, err)
	}
	fmt.Fprintf(c.stderr, "wrote %s: %s from %s\n", *out, explorer.Plural(len(runs), "run"), cl.URL())
	return nil
}

// writeRunsCSV is explorer.WriteRunCSV for many runs: one header, and the
// run's id, sweep, agent, status and date before each line.
func writeRunsCSV(w io.Writer, runs []protocol.Run) error {
	cw := csv.NewWriter(w)
	for i := range runs {
		r := &runs[i]
		var buf bytes.Buffer
		if err := explorer.WriteRunCSV(&buf, r); err != nil {
			return err
		}
		recs, err := csv.NewReader(&buf).ReadAll()
		if err != nil {
			return fmt.Errorf("run %s: %w", r.ID, err)
		}
		for j, rec := range recs {
			if j == 0 && i > 0 {
				continue
			}
			pre := []string{"run_id", "sweep_id", "agent_id", "status", "started_at"}
			if j > 0 {
				pre = []string{r.ID, r.SweepID, r.AgentID, r.Status, r.StartedAt.UTC().Format("2006-01-02T15:04:05Z")}
			}
			if err := cw.Write(append(pre, rec...)); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}
