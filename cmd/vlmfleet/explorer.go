package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vlmfleet/vlmfleet/controller/client"
	"github.com/vlmfleet/vlmfleet/explorer"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// cmdExplorer dispatches `vlmfleet explorer table|export|profiles`.
func cmdExplorer(ctx context.Context, c *cli, args []string) error {
	return subcommand(ctx, c, args, map[string]func(context.Context, *cli, []string) error{"table": explorerTable, "export": explorerExport, "profiles": explorerProfiles},
		"table, export or profiles", groupHelp("the explorer for scripts and for publishing", "explorer table", "explorer export", "explorer profiles"))
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
	fs.IntVar(&q.Images, "images", def.Images, "images per camera: "+imageCountsText())
	fs.Float64Var(&q.Target, "target", def.Target, "performance target: seconds until the answer starts")
	fs.Float64Var(&q.Interval, "every", 0, "read the levels measured with each camera sending one frame every `SECONDS` (0: back to back, as published)")
	fs.StringVar(&q.Statistic, "statistic", "mean", "judge a level by its mean response time (as published), p90 or p95 (slow answers; a failed request or dropped frame never started)")
	sortBy := fs.String("sort", "max", "sort by "+sortNamesText)
	device := fs.String("device", "", "only rows whose device contains this text (any case), e.g. \"AGX Orin\"")
	model := fs.String("model", "", "only rows whose model contains this text (any case), e.g. qwen3")
	asJSON := fs.Bool("json", false, "print the rows as GET /api/explorer/rows does")
	costs := addCostFlags(fs)
	files, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	cost, err := costs.cost()
	if err != nil {
		return usageError{err}
	}
	if err := q.Normalize(); err != nil {
		return usageError{fmt.Errorf("--%w", err)}
	}
	if !slices.Contains(imageCounts(), q.Images) {
		return usageError{fmt.Errorf("--images %d: want %s (the image counts the method measures)", q.Images, imageCountsText())}
	}
	less, ok := explorer.TableOrders()[*sortBy]
	if !ok {
		return usageError{fmt.Errorf("--sort %q: want %s", *sortBy, sortNamesText)}
	}
	ds, _, err := src.load(ctx, c, files)
	if err != nil {
		return err
	}
	if err := checkDevices(&cost, ds); err != nil {
		return usageError{err}
	}
	res := explorer.Select(ds, q)
	res.Rows = slices.DeleteFunc(res.Rows, func(r explorer.RowView) bool {
		return !containsFold(r.Device, *device) || !containsFold(r.Model, *model)
	})
	res.Total = len(res.Rows)
	slices.SortStableFunc(res.Rows, less)
	// The power columns show when the dataset has power samples, as on the
	// page; --json carries the cost exactly when the table prints it.
	power := explorer.HasPower(ds)
	if *asJSON {
		if power {
			res = explorer.WithCost(res, cost)
		}
		enc := json.NewEncoder(c.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	return explorer.WriteTableWith(c.stdout, res, explorer.TableOptions{Power: power, Cost: cost})
}

// sortNamesText lists explorer.TableOrders for help and errors.
const sortNamesText = "max (Max Cameras, highest first), ttft (fastest first), tps (highest first), params (smallest first), model or device"

// imageCounts are the images per camera the method measures: one, and the
// counts of its one-camera multi-image family.
func imageCounts() []int {
	out := []int{1}
	for _, n := range protocol.DefaultWorkload().ImagesPerRequest {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

func imageCountsText() string {
	var s []string
	for _, n := range imageCounts() {
		s = append(s, strconv.Itoa(n))
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}

// containsFold reports whether s contains sub, in any case; "" matches all.
func containsFold(s, sub string) bool {
	return strings.Contains(strings.ToLower(s), strings.ToLower(strings.TrimSpace(sub)))
}

func explorerExport(ctx context.Context, c *cli, args []string) error {
	fs := newFlagSet(c, "explorer export")
	src := addDatasetFlags(fs)
	out := fs.String("out", "", "the HTML file to write ('-' for standard output)")
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
