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
	"strings"
	"syscall"

	"github.com/rs/zerolog"

	"github.com/vlmfleet/vlmfleet/controller/client"
)

// version, commit and date are set at build time with
// -ldflags "-X main.version=v1.2.0 -X main.commit=$(git rev-parse HEAD) -X main.date=$(date -u +%FT%TZ)";
// a plain `go build` in a checkout gets the commit and date from the build
// info instead (see buildVersion).
var version, commit, date = "dev", "", ""

// cli carries what every subcommand needs instead of package-level state.
type cli struct {
	stdout io.Writer
	stderr io.Writer
	// tty is whether stderr is a terminal: progress bars and colour logs then.
	tty     bool
	log     zerolog.Logger
	version string
	// build is the version, commit and date, as `vlmfleet version` prints them.
	build  buildInfo
	getenv func(string) string
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
		"join-token":  {"create | list | revoke ID: join strings with which devices enrol themselves", cmdJoinToken},
		"sweep":       {"sweep [list | watch ID | cancel ID]: submit, list, follow or cancel sweeps", cmdSweep},
		"agents":      {"list a controller's agents, their state and deployments", cmdAgents},
		"bench":       {"measure an endpoint you already run (no lab needed)", cmdBench},
		"device":      {"print the detected device and one telemetry sample", cmdDevice},
		"sim":         {"serve the simulated engine on its own", cmdSim},
		"explorer":    {"explorer table | export: the explorer for scripts and for publishing", cmdExplorer},
		"results":     {"results import FILE... | export --format csv|json | diff A B: move result documents in and out, compare two runs", cmdResults},
		"version":     {"print the version, commit and build date (also --version)", cmdVersion},
	}
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr, os.Getenv))
}

func run(args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	b := buildVersion(version, commit, date)
	c := &cli{stdout: stdout, stderr: stderr, version: b.Version, build: b, getenv: getenv}
	c.tty = isTerminal(stderr)
	name := ""
	if len(args) > 0 {
		name = args[0]
	}
	c.log = newLogger(stderr, c.tty, logFormat(name, c.tty, getenv("VLMFLEET_LOG_FORMAT")), getenv("VLMFLEET_LOG_LEVEL"))

	switch {
	case len(args) == 0:
		// A bare command is a mistake in a script; say how to call it.
		usage(stderr)
		return 2
	case args[0] == "help" || args[0] == "-h" || args[0] == "--help":
		usage(stdout)
		return 0
	case args[0] == "--version" || args[0] == "-version":
		args = []string{"version"}
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
		var he helpRequest
		if errors.As(err, &he) {
			he.write(c.stdout)
			return 0
		}
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		var ee exitError
		if errors.As(err, &ee) {
			fmt.Fprintf(stderr, "vlmfleet %s: %v\n", args[0], err)
			return ee.code
		}
		var ie inputError
		if errors.As(err, &ie) {
			fmt.Fprintf(stderr, "vlmfleet %s: %v\n", args[0], err)
			return 2
		}
		var ue usageError
		if errors.As(err, &ue) {
			fmt.Fprintf(stderr, "vlmfleet %s: %v\n", args[0], err)
			fmt.Fprintf(stderr, "Run 'vlmfleet %s -h' for its flags and an example.\n", ue.command(args))
			return 2
		}
		fmt.Fprintf(stderr, "vlmfleet %s: %v\n", args[0], err)
		return 1
	}
	return 0
}

// exitError is an error that ends the command with its own exit status.
type exitError struct {
	code int
	err  error
}

func (e exitError) Error() string { return e.err.Error() }
func (e exitError) Unwrap() error { return e.err }

// inputError marks a mistake in a file the command was given (exit status
// 2): the message names the file and where in it; the command's help has
// nothing to add, so it is not pointed at.
type inputError struct{ error }

// usageError marks a mistake in how a command was called (exit status 2).
type usageError struct{ error }

// command is the command whose help points at the mistake: the flag set's
// when the error came from parsing one ("sweep list"), else the subcommand
// named by the arguments when it has help of its own, else the command.
func (u usageError) command(args []string) string {
	var fe flagError
	if errors.As(u.error, &fe) {
		return fe.name
	}
	if len(args) > 1 {
		if _, ok := helps[args[0]+" "+args[1]]; ok {
			return args[0] + " " + args[1]
		}
	}
	return args[0]
}

// flagError is a flag set's parse error, naming the set.
type flagError struct {
	name string
	err  error
}

func (e flagError) Error() string { return e.err.Error() }
func (e flagError) Unwrap() error { return e.err }

// helpRequest is -h: the help of the flag set, printed to standard output
// by run, which ends with status 0.
type helpRequest struct{ fs *flag.FlagSet }

func (helpRequest) Error() string { return "help requested" }

func (h helpRequest) write(w io.Writer) {
	name := strings.TrimPrefix(h.fs.Name(), "vlmfleet ")
	h.fs.SetOutput(w)
	writeHelp(w, helps[name], h.fs)
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "vlmfleet: how many cameras can this device watch with this vision-language model?")
	fmt.Fprintln(w, "\nUsage: vlmfleet COMMAND [flags]\n\nCommands:")
	cmds := commands()
	for _, n := range slices.Sorted(maps.Keys(cmds)) {
		fmt.Fprintf(w, "  %-11s %s\n", n, cmds[n].summary)
	}
	fmt.Fprintln(w, "\nRun 'vlmfleet COMMAND -h' for a command's flags.")
}

// newFlagSet makes a flag set whose errors come back as usage errors and
// whose -h prints the command's help (helps[name]). The flag package's own
// output is silenced: run prints the one error line and where help is.
func newFlagSet(_ *cli, name string) *flag.FlagSet {
	fs := flag.NewFlagSet("vlmfleet "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
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
			return helpRequest{fs}
		}
		return usageError{flagError{strings.TrimPrefix(fs.Name(), "vlmfleet "), err}}
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

func cmdVersion(_ context.Context, c *cli, args []string) error {
	fs := newFlagSet(c, "version")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected argument %q", fs.Arg(0))}
	}
	fmt.Fprintln(c.stdout, c.build)
	return nil
}
