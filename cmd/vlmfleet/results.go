package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"path/filepath"

	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/controller/client"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// cmdResults dispatches `vlmfleet results import`.
func cmdResults(ctx context.Context, c *cli, args []string) error {
	return subcommand(ctx, c, args, map[string]func(context.Context, *cli, []string) error{"import": resultsImport, "export": resultsExport, "diff": resultsDiff},
		"import FILE..., export --format csv|json, or diff A B", groupHelp("move result documents into and out of a controller", "results import", "results export", "results diff"))
}

// resultsImport reads every file, checks every result document in them, and
// only when all are valid sends them to the controller in one request, so a
// bad file imports nothing.
func resultsImport(ctx context.Context, c *cli, args []string) error {
	fs := newFlagSet(c, "results import")
	controller := fs.String("controller", "", "controller URL (default $"+client.EnvURL+", else "+client.DefaultURL+")")
	origin := fs.String("origin", "", "where the runs came from (default: each file's name)")
	tokenFile := tokenFileFlag(fs)
	files, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return usageError{errors.New("no files given: want one or more result documents")}
	}
	cl, err := newClient(c, *controller, *tokenFile)
	if err != nil {
		return err
	}
	var entries []api.ImportEntry
	for _, path := range files {
		_, runs, err := protocol.ReadRunFile(path)
		if err != nil {
			return err
		}
		o := *origin
		if o == "" {
			o = filepath.Base(path)
		}
		for _, r := range runs {
			entries = append(entries, api.ImportEntry{Origin: o, Run: r})
		}
	}
	res, err := cl.Import(ctx, entries)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "imported %d of %d runs into %s\n", res.Imported, len(entries), cl.URL())
	for i, id := range res.IDs {
		from := ""
		if len(res.IDs) == len(entries) {
			from = "  (" + entries[i].Origin + ")"
		}
		fmt.Fprintf(c.stdout, "  %s%s\n", id, from)
	}
	return nil
}

// parseInterspersed parses flags that may come before, between or after the
// positional arguments ("import a.json --origin lab2 b.json"); "--" ends flags.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := parseFlags(fs, args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}
