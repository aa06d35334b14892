package main

import (
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"

	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/controller/client"
	"github.com/vlmfleet/vlmfleet/explorer"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// sweepSubcommands are `vlmfleet sweep list|watch|cancel`; any other first
// argument is the flags of a sweep to submit.
func sweepSubcommands() map[string]func(context.Context, *cli, []string) error {
	return map[string]func(context.Context, *cli, []string) error{
		"list": sweepList, "watch": sweepWatchCmd, "cancel": sweepCancelCmd,
	}
}

// controllerFlags are --controller and --token-file, which every command
// that talks to a controller takes.
type controllerFlags struct{ controller, tokenFile *string }

func addControllerFlags(fs *flag.FlagSet) controllerFlags {
	return controllerFlags{
		controller: fs.String("controller", "", "controller URL (default $"+client.EnvURL+", else "+client.DefaultURL+")"),
		tokenFile:  tokenFileFlag(fs),
	}
}

func (f controllerFlags) client(c *cli) (*client.Client, error) {
	return newClient(c, *f.controller, *f.tokenFile)
}

// again is the flags to give a later command for the same controller as
// this one: those given here (the environment serves both alike).
func (f controllerFlags) again() string {
	return againFlags(*f.controller, *f.tokenFile)
}

func againFlags(controller, tokenFile string) string {
	var b strings.Builder
	if controller != "" {
		fmt.Fprintf(&b, " --controller %s", controller)
	}
	if tokenFile != "" {
		fmt.Fprintf(&b, " --token-file %s", tokenFile)
	}
	return b.String()
}

// oneID parses fs and wants exactly one positional argument, an id.
func oneID(fs *flag.FlagSet, args []string, what string) (string, error) {
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return "", err
	}
	if len(pos) != 1 {
		return "", usageError{fmt.Errorf("want one %s id, got %d arguments", what, len(pos))}
	}
	if err := protocol.ValidateID(what+" id", pos[0]); err != nil {
		return "", usageError{err}
	}
	return pos[0], nil
}

// listCommand parses the command line of a command that lists what one
// API endpoint returns: the controller's flags and --json (jsonHelp says
// what it prints), no argument. It returns the controller's client and
// whether to print JSON.
func listCommand(c *cli, name, jsonHelp string, args []string) (*client.Client, bool, error) {
	fs := newFlagSet(c, name)
	cf := addControllerFlags(fs)
	asJSON := fs.Bool("json", false, jsonHelp)
	if err := parseFlags(fs, args); err != nil {
		return nil, false, err
	}
	if fs.NArg() > 0 {
		return nil, false, usageError{fmt.Errorf("unexpected argument %q", fs.Arg(0))}
	}
	cl, err := cf.client(c)
	return cl, *asJSON, err
}

func sweepList(ctx context.Context, c *cli, args []string) error {
	cl, asJSON, err := listCommand(c, "sweep list", "print the sweeps as GET /api/sweeps does", args)
	if err != nil {
		return err
	}
	sweeps, err := cl.Sweeps(ctx)
	if err != nil {
		return err
	}
	// Newest first: the sweep one looks for is usually the last one.
	slices.SortStableFunc(sweeps, func(a, b api.SweepView) int { return b.CreatedAt.Compare(a.CreatedAt) })
	if asJSON {
		return writeJSON(c, sweeps)
	}
	if len(sweeps) == 0 {
		fmt.Fprintf(c.stdout, "controller %s has no sweep yet; submit one with: vlmfleet sweep --wait\n", cl.URL())
		return nil
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SWEEP\tNAME\tCREATED\tJOBS\tOUTCOME")
	for _, s := range sweeps {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", s.ID, cmp.Or(s.Name, "-"), s.CreatedAt.Local().Format("2006-01-02 15:04"), s.Status.Jobs, sweepOutcome(s.Status))
	}
	return tw.Flush()
}

// sweepOutcome is a sweep's progress in words: "running: 1 of 3 ended",
// "done: 3 completed", "done: 2 completed, 1 failed".
func sweepOutcome(st api.SweepStatus) string {
	var parts []string
	for _, s := range []protocol.JobState{protocol.JobCompleted, protocol.JobFailed, protocol.JobCancelled, protocol.JobRejected,
		protocol.JobRunning, protocol.JobStarting, protocol.JobAccepted, protocol.JobQueued} {
		if n := st.States[s]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, s))
		}
	}
	out := strings.Join(parts, ", ")
	if st.Stalled > 0 {
		out += fmt.Sprintf(" (%d stalled: agent offline)", st.Stalled)
	}
	if st.Done {
		return "done: " + out
	}
	return "running: " + out
}

func sweepWatchCmd(ctx context.Context, c *cli, args []string) error {
	fs := newFlagSet(c, "sweep watch")
	cf := addControllerFlags(fs)
	id, err := oneID(fs, args, "sweep")
	if err != nil {
		return err
	}
	cl, err := cf.client(c)
	if err != nil {
		return err
	}
	return waitSweep(ctx, c, cl, id, cf.again())
}

func sweepCancelCmd(ctx context.Context, c *cli, args []string) error {
	fs := newFlagSet(c, "sweep cancel")
	cf := addControllerFlags(fs)
	id, err := oneID(fs, args, "sweep or job")
	if err != nil {
		return err
	}
	cl, err := cf.client(c)
	if err != nil {
		return err
	}
	return cancelByID(ctx, c, cl, id)
}

// writeSweepAnswer prints the explorer's answer for the sweep's runs, read
// where the sweep measured: 720p (else its first size), its fewest cameras,
// one image per camera, the sweep's judgement (the mean and 3 s unless it
// names one), back to back and at each of its frame intervals. A profile
// sweep's answer is each run's profile tables.
func writeSweepAnswer(ctx context.Context, c *cli, cl *client.Client, s api.SweepView) error {
	runs, err := cl.Runs(ctx, client.RunFilter{Sweep: s.ID, NoSeries: true})
	if err != nil {
		return fmt.Errorf("the sweep's runs: %w", err)
	}
	if len(runs) == 0 {
		fmt.Fprintln(c.stdout, "no run of the sweep has results")
		return nil
	}
	w := s.Workload
	if w.Profile != nil {
		// A profile has no camera answer: each run's tables instead.
		for i := range runs {
			writeProfileSummary(c.stdout, &runs[i])
		}
		return nil
	}
	q := explorer.DefaultQuery()
	if len(w.Sizes) > 0 && !slices.Contains(w.Sizes, q.Size) {
		q.Size = w.Sizes[0]
	}
	if len(w.Cameras) > 0 {
		q.Cameras = slices.Min(w.Cameras)
	}
	q.Target, q.Statistic = w.Judgement.Target(), w.Judgement.Statistic
	return writeAnswers(c.stdout, "The sweep's runs", explorer.Aggregate(runs, time.Now()), q, w.FrameIntervalSec)
}

// naturalLess orders ids with their numbers by value: "sw-1-j2" before
// "sw-1-j10", as a person counts.
func naturalLess(a, b string) int {
	for a != "" && b != "" {
		da, db := unicode.IsDigit(rune(a[0])), unicode.IsDigit(rune(b[0]))
		if da && db {
			na, ra := leadingDigits(a)
			nb, rb := leadingDigits(b)
			x, _ := strconv.ParseUint(strings.TrimLeft(na, "0"), 10, 64)
			y, _ := strconv.ParseUint(strings.TrimLeft(nb, "0"), 10, 64)
			if c := cmp.Compare(x, y); c != 0 {
				return c
			}
			if c := cmp.Compare(len(na), len(nb)); c != 0 {
				return c
			}
			a, b = ra, rb
			continue
		}
		if a[0] != b[0] {
			return cmp.Compare(a[0], b[0])
		}
		a, b = a[1:], b[1:]
	}
	return cmp.Compare(len(a), len(b))
}

func leadingDigits(s string) (digits, rest string) {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return s[:i], s[i:]
}

func writeJSON(c *cli, v any) error {
	enc := json.NewEncoder(c.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
