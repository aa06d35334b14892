// Command vlmfleet measures how many cameras a device can watch with a
// vision-language model, across a lab of devices. Run `vlmfleet help`.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"slices"
	"syscall"

	"github.com/rs/zerolog"

	"github.com/vlmfleet/vlmfleet/controller/client"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// cli carries what every subcommand needs instead of package-level state.
type cli struct {
	stdout io.Writer
	stderr io.Writer
	// tty is whether stderr is a terminal: progress bars and colour logs then.
	tty     bool
	log     zerolog.Logger
	version string
	getenv  func(string) string
}

type command struct {
	summary string
	run     func(ctx context.Context, c *cli, args []string) error
}

func commands() map[string]command {
	return map[string]command{
		"demo":        {"run a controller and three simulated agents, sweep them and serve the explorer", cmdDemo},
		"controller":  {"run the controller: embedded NATS, store, scheduler, API and explorer", cmdController},
		"agent":       {"run an agent that measures the engines of this device", cmdAgent},
		"agent-creds": {"create | revoke ID: issue or revoke an agent's NATS credentials", cmdAgentCreds},
		"sweep":       {"submit a sweep to a controller", cmdSweep},
		"bench":       {"measure an endpoint you already run (no lab needed)", cmdBench},
		"device":      {"print the detected device and one telemetry sample", cmdDevice},
		"sim":         {"serve the simulated engine on its own", cmdSim},
		"explorer":    {"explorer table | export: the explorer for scripts and for publishing", cmdExplorer},
		"results":     {"results import FILE...: load result documents into a controller", cmdResults},
		"version":     {"print the version", cmdVersion},
	}
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr, os.Getenv))
}

func run(args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	c := &cli{stdout: stdout, stderr: stderr, version: version, getenv: getenv}
	c.tty = isTerminal(stderr)
	c.log = newLogger(stderr, c.tty, getenv("VLMFLEET_LOG_LEVEL"))

	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(stdout)
		return 0
	}
	cmd, ok := commands()[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "vlmfleet: unknown command %q\n\n", args[0])
		usage(stderr)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := cmd.run(ctx, c, args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		var ue usageError
		if errors.As(err, &ue) {
			fmt.Fprintf(stderr, "vlmfleet %s: %v\n", args[0], err)
			return 2
		}
		fmt.Fprintf(stderr, "vlmfleet %s: %v\n", args[0], err)
		return 1
	}
	return 0
}

// usageError marks a mistake in how a command was called (exit status 2).
type usageError struct{ error }

func usage(w io.Writer) {
	fmt.Fprintln(w, "vlmfleet: how many cameras can this device watch with this vision-language model?")
	fmt.Fprintln(w, "\nUsage: vlmfleet COMMAND [flags]\n\nCommands:")
	cmds := commands()
	for _, n := range slices.Sorted(maps.Keys(cmds)) {
		fmt.Fprintf(w, "  %-11s %s\n", n, cmds[n].summary)
	}
	fmt.Fprintln(w, "\nRun 'vlmfleet COMMAND -h' for a command's flags.")
}

// newFlagSet makes a flag set whose errors come back as usage errors.
func newFlagSet(c *cli, name string) *flag.FlagSet {
	fs := flag.NewFlagSet("vlmfleet "+name, flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	return fs
}

// setUsage makes -h print text, then the flags.
func setUsage(fs *flag.FlagSet, text string) {
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), text)
		fs.PrintDefaults()
	}
}

// subcommand runs the one of subs that args[0] names; want names them in
// errors, and help is what -h prints.
func subcommand(ctx context.Context, c *cli, args []string, subs map[string]func(context.Context, *cli, []string) error, want, help string) error {
	if len(args) == 0 {
		return usageError{errors.New("want a subcommand: " + want)}
	}
	if run, ok := subs[args[0]]; ok {
		return run(ctx, c, args[1:])
	}
	if args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprintln(c.stdout, help)
		return nil
	}
	return usageError{fmt.Errorf("unknown subcommand %q: want %s", args[0], want)}
}

// parseFlags parses and turns flag errors into usage errors.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err}
	}
	return nil
}

// newClient is the client of the controller that --controller (flagValue)
// names, else $VLMFLEET_CONTROLLER, else the default address, with the API
// token of --token-file (tokenFile), else $VLMFLEET_TOKEN, else
// $VLMFLEET_TOKEN_FILE, else ./vlmfleet-data/api-token if there is one,
// trusting the CA of $VLMFLEET_CA_FILE or $VLMFLEET_CA_PIN under https.
func newClient(c *cli, flagValue, tokenFile string) (*client.Client, error) {
	base, err := client.BaseURL(flagValue, c.getenv)
	if err != nil {
		return nil, usageError{err}
	}
	token, err := client.Token(tokenFile, c.getenv)
	if err != nil {
		return nil, err
	}
	return client.New(base, client.WithToken(token), client.TLSFromEnv(c.getenv))
}

// tokenFileFlag adds --token-file.
func tokenFileFlag(fs *flag.FlagSet) *string {
	return fs.String("token-file", "", "the controller's API token file, <data-dir>/api-token (default $"+client.EnvToken+", else $"+client.EnvTokenFile+", else "+client.DefaultTokenFile+")")
}

func cmdVersion(_ context.Context, c *cli, _ []string) error {
	fmt.Fprintln(c.stdout, "vlmfleet", c.version)
	return nil
}
