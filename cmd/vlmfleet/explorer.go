package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/vlmfleet/vlmfleet/controller/client"
	"github.com/vlmfleet/vlmfleet/explorer"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// cmdExplorer dispatches `vlmfleet explorer table|export`.
func cmdExplorer(ctx context.Context, c *cli, args []string) error {
	return subcommand(ctx, c, args, map[string]func(context.Context, *cli, []string) error{"table": explorerTable, "export": explorerExport},
		"table or export", "Usage: vlmfleet explorer table [flags]   the table at one view, for scripts\n       vlmfleet explorer export --out FILE [flags]   one self-contained HTML file")
}

// datasetFlags choose where the runs come from: a controller, or local files.
type datasetFlags struct {
	controller, tokenFile *string
	files                 []string
}

func addDatasetFlags(fs *flag.FlagSet) *datasetFlags {
	d := &datasetFlags{}
	d.controller = fs.String("controller", "", "controller URL (default $"+client.EnvURL+", else "+client.DefaultURL+")")
	d.tokenFile = tokenFileFlag(fs) // reads of a controller off loopback need it
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
			_, rs, err := protocol.ReadRunFile(p)
			if err != nil {
				return explorer.Dataset{}, "", err
			}
			runs = append(runs, rs...)
		}
		return explorer.Aggregate(runs, time.Now()), strings.Join(all, ", "), nil
	}
	cl, err := newClient(c, *d.controller, *d.tokenFile)
	if err != nil {
		return explorer.Dataset{}, "", err
	}
	ds, err := cl.ExplorerData(ctx)
	return ds, cl.URL(), err
}

func explorerTable(ctx context.Context, c *cli, args []string) error {
	fs := newFlagSet(c, "explorer table")
	src := addDatasetFlags(fs)
	def := explorer.DefaultQuery()
	q := def
	fs.StringVar(&q.Size, "size", def.Size, "image size: 480p, 720p, 1080p or 2K")
	fs.IntVar(&q.Cameras, "cameras", def.Cameras, "cameras sending at once (the figures are read here)")
	fs.IntVar(&q.Images, "images", def.Images, "images per camera: 1, 3 or 5")
	fs.Float64Var(&q.Target, "target", def.Target, "performance target: seconds until the answer starts")
	sortBy := fs.String("sort", "max", "sort by max (Max Cameras), ttft, model or device")
	asJSON := fs.Bool("json", false, "print the rows as GET /api/explorer/rows does")
	setUsage(fs, "Usage: vlmfleet explorer table [--controller URL | --file run.json... | run.json...] [flags]\n\nPrints the explorer's table at one view: only rows measured at the size, images and cameras.")
	files, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if err := q.Normalize(); err != nil {
		return usageError{err}
	}
	less, ok := explorer.TableOrders()[*sortBy]
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
	return explorer.WriteTable(c.stdout, res)
}

func explorerExport(ctx context.Context, c *cli, args []string) error {
	fs := newFlagSet(c, "explorer export")
	src := addDatasetFlags(fs)
	out := fs.String("out", "", "the HTML file to write ('-' for standard output)")
	setUsage(fs, "Usage: vlmfleet explorer export --out explorer.html [--controller URL | --file run.json... | run.json...]\n\nWrites the explorer as one self-contained HTML file with the data inside; it works offline.")
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
		return explorer.Export(c.stdout, ds)
	}
	n, err := explorer.ExportFile(*out, ds)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "wrote %s: %s (%d simulated) from %s, %d bytes\n", *out, explorer.Plural(len(ds.Rows), "row"), ds.SimulatedRows, from, n)
	return nil
}
