package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/vlmfleet/vlmfleet/explorer"
	"github.com/vlmfleet/vlmfleet/explorer/web"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// maxDatasetBytes bounds the dataset read from a controller.
const maxDatasetBytes = 512 << 20

// cmdExplorer dispatches `vlmfleet explorer table|export`.
func cmdExplorer(ctx context.Context, c *cli, args []string) error {
	if len(args) == 0 {
		return usageError{errors.New("want a subcommand: table or export")}
	}
	switch args[0] {
	case "table":
		return explorerTable(ctx, c, args[1:])
	case "export":
		return explorerExport(ctx, c, args[1:])
	case "-h", "--help", "help":
		fmt.Fprintln(c.stdout, "Usage: vlmfleet explorer table [flags]   the table at one view, for scripts\n       vlmfleet explorer export --out FILE [flags]   one self-contained HTML file")
		return nil
	}
	return usageError{fmt.Errorf("unknown subcommand %q: want table or export", args[0])}
}

// datasetFlags choose where the runs come from: a controller, or local files.
type datasetFlags struct {
	controller *string
	files      []string
}

func addDatasetFlags(c *cli, fs *flag.FlagSet) *datasetFlags {
	d := &datasetFlags{}
	d.controller = fs.String("controller", "", "controller base URL (default "+defaultControllerBase+" or env VLMFLEET_CONTROLLER)")
	fs.Func("file", "a result document, or a JSON array of them, to read instead of a controller (repeatable)", func(s string) error {
		d.files = append(d.files, s)
		return nil
	})
	return d
}

// load builds the dataset from the files, or fetches it from the controller.
func (d *datasetFlags) load(ctx context.Context, c *cli, files []string) (explorer.Dataset, string, error) {
	all := append(append([]string(nil), d.files...), files...)
	if len(all) > 0 {
		if *d.controller != "" {
			return explorer.Dataset{}, "", usageError{errors.New("give --controller or files, not both")}
		}
		var runs []protocol.Run
		for _, p := range all {
			_, rs, err := readRunFile(p)
			if err != nil {
				return explorer.Dataset{}, "", err
			}
			runs = append(runs, rs...)
		}
		return explorer.Aggregate(runs, time.Now()), strings.Join(all, ", "), nil
	}
	base, err := checkControllerBase(cmp.Or(*d.controller, envOrDefault(c, "VLMFLEET_CONTROLLER", defaultControllerBase)))
	if err != nil {
		return explorer.Dataset{}, "", err
	}
	ds, err := fetchDataset(ctx, base)
	return ds, base, err
}

func fetchDataset(ctx context.Context, base string) (explorer.Dataset, error) {
	var ds explorer.Dataset
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+explorer.PathData, nil)
	if err != nil {
		return ds, fmt.Errorf("explorer data request: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return ds, fmt.Errorf("fetching the explorer data: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxDatasetBytes))
	if err != nil {
		return ds, fmt.Errorf("reading the explorer data from %s: %w", base, err)
	}
	if resp.StatusCode != http.StatusOK {
		return ds, fmt.Errorf("%s%s: %s: %s", base, explorer.PathData, resp.Status, strings.TrimSpace(string(body)))
	}
	if err := json.Unmarshal(body, &ds); err != nil {
		return ds, fmt.Errorf("%s%s: not explorer data: %w", base, explorer.PathData, err)
	}
	if ds.Schema < 1 || ds.Schema > explorer.SchemaVersion {
		return ds, fmt.Errorf("%s%s: dataset schema %d, this build reads 1..%d", base, explorer.PathData, ds.Schema, explorer.SchemaVersion)
	}
	return ds, nil
}

// tableSorts orders the table; ties fall back to the dataset's order.
func tableSorts() map[string]func(a, b explorer.RowView) int {
	byModel := func(a, b explorer.RowView) int {
		return cmp.Or(strings.Compare(a.Model, b.Model), cmp.Compare(a.ParamsB, b.ParamsB), strings.Compare(a.Quantization, b.Quantization), strings.Compare(a.Engine, b.Engine))
	}
	return map[string]func(a, b explorer.RowView) int{
		"max": func(a, b explorer.RowView) int {
			return cmp.Or(cmp.Compare(b.MaxCameras, a.MaxCameras), cmpTrueFirst(a.Plus, b.Plus), cmp.Compare(ttftOrInf(a), ttftOrInf(b)), byModel(a, b))
		},
		"ttft":   func(a, b explorer.RowView) int { return cmp.Or(cmp.Compare(ttftOrInf(a), ttftOrInf(b)), byModel(a, b)) },
		"model":  func(a, b explorer.RowView) int { return cmp.Or(byModel(a, b), strings.Compare(a.Device, b.Device)) },
		"device": func(a, b explorer.RowView) int { return cmp.Or(strings.Compare(a.Device, b.Device), byModel(a, b)) },
	}
}

// ttftOrInf sorts a row without figures (every request failed) after the others.
func ttftOrInf(r explorer.RowView) float64 {
	if r.TTFT == nil {
		return math.Inf(1)
	}
	return *r.TTFT
}

func cmpTrueFirst(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return -1
	}
	return 1
}

func explorerTable(ctx context.Context, c *cli, args []string) error {
	fs := newFlagSet(c, "explorer table")
	src := addDatasetFlags(c, fs)
	def := explorer.DefaultQuery()
	q := def
	fs.StringVar(&q.Size, "size", def.Size, "image size: 480p, 720p, 1080p or 2K")
	fs.IntVar(&q.Cameras, "cameras", def.Cameras, "cameras sending at once (the figures are read here)")
	fs.IntVar(&q.Images, "images", def.Images, "images per camera: 1, 3 or 5")
	fs.Float64Var(&q.Target, "target", def.Target, "performance target: seconds until the answer starts")
	sortBy := fs.String("sort", "max", "sort by max (Max Cameras), ttft, model or device")
	asJSON := fs.Bool("json", false, "print the rows as GET /api/explorer/rows does")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: vlmfleet explorer table [--controller URL | --file run.json... | run.json...] [flags]\n\nPrints the explorer's table at one view: only rows measured at the size, images and cameras.")
		fs.PrintDefaults()
	}
	files, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if err := q.Normalize(); err != nil {
		return usageError{err}
	}
	less, ok := tableSorts()[*sortBy]
	if !ok {
		return usageError{fmt.Errorf("--sort %q: want max, ttft, model or device", *sortBy)}
	}
	ds, _, err := src.load(ctx, c, files)
	if err != nil {
		return err
	}
	res := explorer.Select(ds, q)
	slices.SortStableFunc(res.Rows, less)
	if *asJSON {
		enc := json.NewEncoder(c.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	return writeTable(c.stdout, res)
}

// writeTable prints the rows aligned, PASS/FAIL in words and simulated rows marked.
func writeTable(w io.Writer, res explorer.RowsResponse) error {
	view := fmt.Sprintf("%s, %s, %s, target %s s", res.Size, pluralize(res.Cameras, "camera"), pluralize(res.Images, "image")+" per camera", explorer.FormatSeconds(res.Target))
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
			params = explorer.FormatParams(r.ParamsB) + "B"
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
			ttft, tps = explorer.FormatSeconds(*r.TTFT)+" s", explorer.FormatTPS(*r.TPS)
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
	fmt.Fprintf(w, "%s at %s", pluralize(len(res.Rows), "row"), view)
	if sim > 0 {
		fmt.Fprintf(w, "; SIM: %d from simulated runs, not real hardware", sim)
	}
	_, err := fmt.Fprintln(w)
	return err
}

func pluralize(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

func explorerExport(ctx context.Context, c *cli, args []string) error {
	fs := newFlagSet(c, "explorer export")
	src := addDatasetFlags(c, fs)
	out := fs.String("out", "", "the HTML file to write ('-' for standard output)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: vlmfleet explorer export --out explorer.html [--controller URL | --file run.json... | run.json...]\n\nWrites the explorer as one self-contained HTML file with the data inside; it works offline.")
		fs.PrintDefaults()
	}
	files, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if *out == "" {
		return usageError{errors.New("--out is required: the HTML file to write")}
	}
	ds, from, err := src.load(ctx, c, files)
	if err != nil {
		return err
	}
	if *out == "-" {
		return exportDataset(c.stdout, ds)
	}
	n, err := writeFileAtomic(*out, func(w io.Writer) error { return exportDataset(w, ds) })
	if err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "wrote %s: %s (%d simulated) from %s, %d bytes\n", *out, pluralize(len(ds.Rows), "row"), ds.SimulatedRows, from, n)
	return nil
}

// exportDataset writes the page with ds inside.
func exportDataset(w io.Writer, ds explorer.Dataset) error {
	data, err := json.Marshal(ds)
	if err != nil {
		return fmt.Errorf("encoding the dataset: %w", err)
	}
	if err := web.Export(w, data); err != nil {
		return fmt.Errorf("writing the page: %w", err)
	}
	return nil
}

// writeFileAtomic writes path through a temporary file in the same directory,
// so a failed export never leaves half a page where the old one was.
func writeFileAtomic(path string, write func(io.Writer) error) (int64, error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return 0, fmt.Errorf("writing %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	cw := &countingWriter{w: tmp}
	if err := write(cw); err != nil {
		tmp.Close()
		return 0, fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return 0, fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return 0, fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return 0, fmt.Errorf("writing %s: %w", path, err)
	}
	return cw.n, nil
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
