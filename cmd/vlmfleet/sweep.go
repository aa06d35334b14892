package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/vlmfleet/vlmfleet/cmd/vlmfleet/internal/termprogress"
	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/controller/client"
	"github.com/vlmfleet/vlmfleet/controller/sweepfile"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// sweepFlags are sweep's own flags besides the workload's.
type sweepFlags struct {
	controller, file, name, agents, deployments, cancel *string
	tokenFile, powerModes, powerLimits, agentLabels     *string
	wait                                                *bool
	workload                                            *workloadFlags
}

func cmdSweep(ctx context.Context, c *cli, args []string) error {
	if len(args) > 0 {
		if sub, ok := sweepSubcommands()[args[0]]; ok {
			return sub(ctx, c, args[1:])
		}
	}
	fs := newFlagSet(c, "sweep")
	f := sweepFlags{
		controller:  fs.String("controller", "", "controller URL (default $"+client.EnvURL+", else "+client.DefaultURL+")"),
		file:        fs.String("file", "", "sweep file (.yaml, .yml or .json); flags override its fields"),
		name:        fs.String("name", "", "a name for the sweep"),
		agents:      fs.String("agents", "", "comma-separated agent ids (default: every online agent)"),
		agentLabels: fs.String("agent-labels", "", "only agents carrying every one of these labels, `k=v,...` (their configuration's labels)"),
		deployments: fs.String("deployments", "", "comma-separated deployment ids (default: all the agents offer)"),
		powerModes:  fs.String("power-modes", "", "comma-separated Jetson power modes to measure each agent in (nvpmodel names, e.g. 15W,MAXN)"),
		powerLimits: fs.String("power-limits", "", "comma-separated GPU power limits in watts to measure each GPU host at (e.g. 300,450)"),
		workload:    addWorkloadFlags(fs),
		wait:        fs.Bool("wait", false, "follow progress until every job of the sweep has ended"),
		cancel:      fs.String("cancel", "", "cancel the sweep (every job not ended) or the job with this id, instead of submitting"),
		tokenFile:   tokenFileFlag(fs),
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected argument %q: want flags, or a subcommand: list, watch ID, cancel ID%s", fs.Arg(0), searchArgHint(fs))}
	}
	var s protocol.Sweep
	if *f.cancel != "" {
		if err := checkCancelFlags(fs, *f.cancel); err != nil {
			return err
		}
	} else {
		var err error
		if s, err = f.sweep(fs); err != nil {
			return err
		}
	}
	cl, err := newClient(c, *f.controller, *f.tokenFile)
	if err != nil {
		return err
	}
	if *f.cancel != "" {
		return cancelByID(ctx, c, cl, *f.cancel)
	}
	created, err := cl.SubmitSweep(ctx, s)
	if err != nil {
		return err
	}
	search := ""
	if n := created.Workload.Search; n > 0 {
		search = fmt.Sprintf(" and the levels a search up to %d cameras chooses", n)
	}
	fmt.Fprintf(c.stdout, "sweep %s: %d jobs, %d combinations each%s\n", created.ID, len(created.Jobs), len(created.Workload.Plan()), search)
	for _, j := range created.Jobs {
		fmt.Fprintf(c.stdout, "  %s\n", j)
	}
	for _, sk := range created.Skipped {
		fmt.Fprintf(c.stdout, "  skipped agent %s: %s\n", sk.AgentID, sk.Reason)
	}
	for _, n := range created.Notes {
		fmt.Fprintf(c.stdout, "  agent %s: %s\n", n.AgentID, n.Note)
	}
	if !*f.wait {
		fmt.Fprintf(c.stdout, "follow it at %s/live or with --wait; results: %s/api/runs?sweep=%s\n", cl.URL(), cl.URL(), created.ID)
		return nil
	}
	return waitSweep(ctx, c, cl, created.ID, againFlags(*f.controller, *f.tokenFile))
}

// sweep builds the sweep: the method's defaults, or the --file sweep, with
// the flags given on top, validated as the controller will.
func (f *sweepFlags) sweep(fs *flag.FlagSet) (protocol.Sweep, error) {
	s := protocol.Sweep{Workload: protocol.DefaultWorkload()}
	if *f.file != "" {
		var err error
		if s, err = readSweepFile(*f.file); err != nil {
			return s, inputError{err}
		}
	}
	if err := f.workload.apply(fs, &s.Workload); err != nil {
		return s, err
	}
	var err error
	fs.Visit(func(fl *flag.Flag) {
		switch fl.Name {
		case "name":
			s.Name = *f.name
		case "agents":
			s.Agents = protocol.SplitList(*f.agents)
		case "agent-labels":
			if s.AgentLabels, err = protocol.ParseLabels("--agent-labels", *f.agentLabels); err != nil {
				err = usageError{err}
			}
		case "deployments":
			s.Deployments = protocol.SplitList(*f.deployments)
		case "power-modes":
			s.PowerModes = protocol.SplitList(*f.powerModes)
		case "power-limits":
			if s.PowerLimitsW, err = parsePowerLimits(*f.powerLimits); err != nil {
				err = usageError{err}
			}
		}
	})
	if err != nil {
		return s, err
	}
	if err := sweepfile.Check(s); err != nil {
		return s, usageError{pointAtFlag(fs, err)}
	}
	return s, nil
}

// checkCancelFlags refuses flags that --cancel would ignore.
func checkCancelFlags(fs *flag.FlagSet, id string) error {
	var other []string
	fs.Visit(func(f *flag.Flag) {
		if f.Name != "cancel" && f.Name != "controller" && f.Name != "token-file" {
			other = append(other, "--"+f.Name)
		}
	})
	if len(other) > 0 {
		return usageError{fmt.Errorf("--cancel takes only --controller and --token-file, not %s", strings.Join(other, ", "))}
	}
	if err := protocol.ValidateID("--cancel", id); err != nil {
		return usageError{err}
	}
	return nil
}

// readSweepFile reads a sweep from YAML or JSON; fields left out take the
// method's defaults. Errors name the file, line and column.
func readSweepFile(path string) (protocol.Sweep, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return protocol.Sweep{}, fmt.Errorf("sweep file: %w", err)
	}
	switch strings.ToLower(filepath.Ext(path)) {
	case ".yaml", ".yml":
		// The controller's own YAML decoder, so that its problems are
		// those the sweeps page shows, each at "file:line:column:" as
		// compilers and editors read a position.
		s, err := sweepfile.DecodeYAML(data)
		var list api.SweepInputErrors
		if errors.As(err, &list) {
			lines := make([]string, len(list))
			for i, in := range list {
				lines[i] = path + ": " + in.Error()
				if in.Line > 0 {
					lines[i] = fmt.Sprintf("%s:%d:%d: %s", path, in.Line, in.Column, in.Error())
				}
			}
			return protocol.Sweep{}, errors.New(strings.Join(lines, "\n"))
		}
		if err != nil {
			return protocol.Sweep{}, fmt.Errorf("%s: %w", path, err)
		}
		return s, nil
	default:
		s, err := sweepfile.Decode(data)
		if err != nil {
			return protocol.Sweep{}, fmt.Errorf("%s: %w", path, err)
		}
		return s, nil
	}
}

// waitSweep draws the progress of the sweep's jobs until all have ended,
// then prints how each ended, in natural order (j2 before j10), and the
// answer for the sweep's runs; the error says whether any failed. again
// is the flags that name the controller in the commands it suggests.
func waitSweep(ctx context.Context, c *cli, cl *client.Client, id, again string) error {
	err := followSweep(ctx, c, cl, id)
	if err != nil && ctx.Err() != nil {
		return sweepGoesOn(id, again)
	}
	return err
}

// sweepGoesOn is what an interrupted wait says: the sweep runs on the
// controller whether anyone waits for it, so the user is told how to
// follow it again and how to stop it (exit 130, as a shell reports an
// interrupted command).
func sweepGoesOn(id, again string) error {
	return exitError{code: 130, err: fmt.Errorf("interrupted; sweep %s goes on on the controller, its jobs on their agents\n"+
		"  follow it again: vlmfleet sweep watch%s %s\n"+
		"  cancel it:       vlmfleet sweep cancel%s %s", id, again, id, again, id)}
}

func followSweep(ctx context.Context, c *cli, cl *client.Client, id string) error {
	first, err := cl.Sweep(ctx, id)
	if err != nil {
		return err
	}
	w := &sweepWatch{c: c, bars: termprogress.New(c.stderr, c.tty), who: map[string]string{}}
	defer func() { w.bars.Close() }()
	for _, j := range first.JobList {
		w.who[j.ID] = strings.TrimSpace(j.AgentID + " " + j.Deployment + " " + j.Power.String())
	}
	v, err := cl.WaitSweep(ctx, id, client.WaitOptions{
		OnEvent: w.show,
		OnError: func(err error) { w.say("sweep status: " + err.Error()) },
	})
	if err != nil {
		return err
	}
	w.bars.Close()
	out := c.stdout
	fmt.Fprintf(out, "sweep %s done: %d jobs, %d completed, %d not\n", v.ID, v.Status.Jobs, v.Status.States[protocol.JobCompleted], v.Status.Failed)
	slices.SortStableFunc(v.JobList, func(a, b api.JobView) int { return naturalLess(a.ID, b.ID) })
	for _, j := range v.JobList {
		line := fmt.Sprintf("  %s  %-10s agent %s  deployment %s", j.ID, j.State, j.AgentID, j.Deployment)
		if p := j.Power.String(); p != "" {
			line += "  power " + p
		}
		if j.RunID != "" {
			line += "  run " + j.RunID
		}
		if j.Error != "" {
			line += "  error: " + j.Error
		}
		fmt.Fprintln(out, line)
	}
	if v.Status.States[protocol.JobCompleted] > 0 {
		if err := writeSweepAnswer(ctx, c, cl, v); err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "\nexplorer: %s/   result documents: %s/api/runs?sweep=%s\n", cl.URL(), cl.URL(), v.ID)
	if v.Status.Failed > 0 {
		return fmt.Errorf("sweep %s: %d of %d jobs did not complete", v.ID, v.Status.Failed, v.Status.Jobs)
	}
	return nil
}

// sweepWatch draws the events of a sweep's jobs.
type sweepWatch struct {
	c    *cli
	bars *termprogress.Bars
	// who labels a job in the bars: its agent and deployment.
	who map[string]string
}

// show draws a progress event in the bars and a state event above them.
func (w *sweepWatch) show(ev client.Event) {
	switch ev.Kind {
	case api.EventProgress:
		var p protocol.Progress
		if ev.Decode(&p) == nil {
			w.bars.Progress(p.JobID, w.who[p.JobID], p)
		}
	case api.EventState:
		var st protocol.JobStateChange
		if ev.Decode(&st) != nil {
			return
		}
		msg := fmt.Sprintf("job %s on %s: %s", st.JobID, st.AgentID, st.State)
		if st.Error != "" {
			msg += ": " + st.Error
		}
		w.say(msg)
	}
}

// say writes a line above the bars: they are finished and drawn anew, as
// a terminal's live lines would otherwise overwrite it.
func (w *sweepWatch) say(line string) {
	w.bars.Close()
	fmt.Fprintln(w.c.stderr, line)
	w.bars = termprogress.New(w.c.stderr, w.c.tty)
}

// cancelByID cancels a sweep or, when no sweep has the id, a job. A job
// that had already ended is reported, not an error: nothing was left to do.
func cancelByID(ctx context.Context, c *cli, cl *client.Client, id string) error {
	sw, err := cl.CancelSweep(ctx, id)
	if err == nil {
		fmt.Fprintf(c.stdout, "sweep %s: %d jobs cancelled, %d asked to stop (their agents report when they have), %d had already ended\n",
			id, len(sw.Cancelled), len(sw.Requested), len(sw.Ended))
		for _, j := range sw.Requested {
			fmt.Fprintf(c.stdout, "  stopping %s\n", j)
		}
		return nil
	}
	if !errors.Is(err, client.ErrNotFound) {
		return err
	}
	job, outcome, err := cl.CancelJob(ctx, id)
	switch {
	case errors.Is(err, client.ErrNotFound):
		return fmt.Errorf("controller %s knows no sweep or job %q", cl.URL(), id)
	case err != nil:
		return err
	case outcome == client.AlreadyEnded:
		fmt.Fprintf(c.stdout, "job %s had already ended (%s); nothing cancelled\n", id, job.State)
	case outcome == client.Cancelled:
		fmt.Fprintf(c.stdout, "job %s: cancelled\n", id)
	default:
		fmt.Fprintf(c.stdout, "job %s: agent %s asked to stop it (%s); it reports cancelled when it has\n", id, job.AgentID, job.State)
	}
	return nil
}
