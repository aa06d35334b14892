package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/vlmfleet/vlmfleet/agent"
	"github.com/vlmfleet/vlmfleet/harness/swarm"
)

// cmdSimSwarm runs many simulated agents in this process against a
// controller, to size the controller before the fleet grows
// (docs/scaling.md).
func cmdSimSwarm(ctx context.Context, c *cli, args []string) error {
	fs := newFlagSet(c, "sim swarm")
	count := fs.Int("count", 0, "how many agents to run (required)")
	ctl := fs.String("controller", "", "controller URL, whose API enrols each agent (default $VLMFLEET_CONTROLLER, else http://127.0.0.1:8080)")
	tokenFile := tokenFileFlag(fs)
	prefix := fs.String("prefix", "swarm", "agent ids are PREFIX-0001, PREFIX-0002, ...")
	device := fs.String("device", "Jetson AGX Orin", "simulated device of every agent")
	models := fs.String("models", "Cosmos3-Edge", "comma-separated models each agent offers (empty: every calibrated profile of the device)")
	speedup := fs.Float64("speedup", 50, "run the simulated engines this many times faster (times are scaled back and recorded)")
	natsURL := fs.String("nats-url", "", "NATS URL the agents connect to (default: the one the controller gives with the credentials)")
	insecure := fs.Bool("insecure", false, "connect without credentials, to a controller started with --insecure (needs --nats-url)")
	logDir := fs.String("log-dir", "", "directory for the engines' logs (default: a new temporary directory, removed at exit)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected argument %q", fs.Arg(0))}
	}
	if *count < 1 {
		return usageError{fmt.Errorf("--count %d: want the number of agents, 1 or more", *count)}
	}
	if *speedup < 1 {
		return usageError{fmt.Errorf("--speedup %g: want 1 or more", *speedup)}
	}
	if *insecure && *natsURL == "" {
		return usageError{fmt.Errorf("--insecure needs --nats-url: without credentials the controller is not asked for its address")}
	}
	var ms []string
	if *models != "" {
		ms = strings.Split(*models, ",")
	}
	if _, err := agent.SimulatedDeployments(*device, *speedup, ms...); err != nil {
		return usageError{err}
	}
	opt := swarm.Options{Count: *count, Prefix: *prefix, NATSURL: *natsURL, Device: *device, Models: ms,
		Speedup: *speedup, LogDir: *logDir, Log: c.log, Version: c.version}
	if !*insecure {
		cl, err := newClient(c, *ctl, *tokenFile)
		if err != nil {
			return err
		}
		opt.Client = cl
	}
	if opt.LogDir == "" {
		dir, err := os.MkdirTemp("", "vlmfleet-swarm-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		opt.LogDir = dir
	}
	s, err := swarm.Start(ctx, opt)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "swarm: %d agents enrolled in %v (%v each), running; interrupt to stop them\n",
		*count, s.Enrolled.Round(time.Millisecond), (s.Enrolled / time.Duration(*count)).Round(time.Microsecond))
	<-ctx.Done()
	err = s.Stop()
	fmt.Fprintf(c.stdout, "swarm: %d agents stopped\n", *count)
	return err
}
