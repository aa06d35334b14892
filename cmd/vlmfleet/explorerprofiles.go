package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"

	"github.com/vlmfleet/vlmfleet/controller/client"
	"github.com/vlmfleet/vlmfleet/explorer/profiles"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// explorerProfiles prints the latency and throughput tables: a
// controller's (the published lines and any measured beside them), or
// with --published the lines built into this binary, asking no one.
func explorerProfiles(ctx context.Context, c *cli, args []string) error {
	fs := newFlagSet(c, "explorer profiles")
	controller := fs.String("controller", "", "controller URL (default $"+client.EnvURL+", else "+client.DefaultURL+")")
	tokenFile := tokenFileFlag(fs)
	builtIn := fs.Bool("published", false, "print the published lines built into vlmfleet, without asking a controller")
	asJSON := fs.Bool("json", false, "print the rows as GET /api/explorer/profiles does")
	filters := url.Values{}
	for _, f := range []struct{ name, usage string }{
		{"model", "only lines whose model contains this text (any case), e.g. 90b"},
		{"gpu", "only lines whose GPU contains this text (any case), e.g. h100"},
		{"precision", "only lines of this precision (any case), e.g. FP8"},
		{"tp", "only lines of this tensor-parallel size"},
		{"profile", "only one table: " + protocol.ProfileMinLatency + " or " + protocol.ProfileMaxThroughput},
		{"source", "only " + protocol.ProfileSourcePublished + " or only " + protocol.ProfileSourceMeasured + " lines"},
	} {
		fs.Func(f.name, f.usage, func(s string) error {
			filters.Add(f.name, s)
			return nil
		})
	}
	if rest, err := parseInterspersed(fs, args); err != nil {
		return err
	} else if len(rest) > 0 {
		return usageError{fmt.Errorf("unexpected argument %q: the filters are flags (--model, --gpu, --precision, --tp, --profile, --source)", rest[0])}
	}
	filter, err := profiles.ParseFilter(filters)
	if err != nil {
		return usageError{fmt.Errorf("--%w", err)}
	}
	rows, err := loadProfiles(ctx, c, filter, *builtIn, *controller, *tokenFile)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(c.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(protocol.ProfileRows{Rows: rows})
	}
	if err := profiles.WriteTables(c.stdout, rows); err != nil {
		return err
	}
	_, err = fmt.Fprintf(c.stdout, "\n%s. Min Latency is at concurrency 1; Max Throughput at the concurrency that saturates the request throughput (measured: %s). ISL = text tokens; the image's tokens are not counted.\n",
		countLines(rows), protocol.ProfileAutoRule)
	return err
}

func loadProfiles(ctx context.Context, c *cli, f profiles.Filter, builtIn bool, controller, tokenFile string) ([]protocol.ProfileRow, error) {
	if !builtIn {
		cl, err := newClient(c, controller, tokenFile)
		if err != nil {
			return nil, err
		}
		res, err := cl.ExplorerProfiles(ctx, f)
		return res.Rows, err
	}
	if controller != "" {
		return nil, usageError{errors.New("give --controller or --published, not both")}
	}
	published, err := profiles.Published()
	if err != nil {
		return nil, err
	}
	return f.Apply(published), nil
}

// countLines says how many lines there are of each source.
func countLines(rows []protocol.ProfileRow) string {
	n := map[string]int{}
	for _, r := range rows {
		n[r.Source]++
	}
	s := strconv.Itoa(len(rows)) + " lines"
	if len(rows) == 1 {
		s = "1 line"
	}
	return fmt.Sprintf("%s: %d published, %d measured", s, n[protocol.ProfileSourcePublished], n[protocol.ProfileSourceMeasured])
}
