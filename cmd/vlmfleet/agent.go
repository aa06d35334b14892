package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"strings"

	"github.com/vlmfleet/vlmfleet/agent"
	"github.com/vlmfleet/vlmfleet/protocol"
)

func cmdAgent(ctx context.Context, c *cli, args []string) error {
	fs := newFlagSet(c, "agent")
	var f agentFlags
	f.define(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	cfg, err := f.config()
	if err != nil {
		return err
	}
	cfg, err = joinOrApply(ctx, c, cfg, cmp.Or(f.join, c.getenv(envJoin)), f.joinOnly)
	if err != nil || f.joinOnly {
		return err
	}
	a, err := agent.New(cfg, agent.Options{Log: c.log, Version: c.version, Getenv: c.getenv})
	if err != nil {
		return err
	}
	return a.Run(ctx)
}

// agentFlags are `vlmfleet agent`'s flags: a configuration file or a
// simulated device, and the settings that override the configuration's.
type agentFlags struct {
	configPath, natsURL, natsCreds, natsCA, natsPin, id string
	simulate, simModels                                 string
	speedup                                             float64
	logDir, join, spoolDir, labels                      string
	joinOnly                                            bool
}

func (f *agentFlags) define(fs *flag.FlagSet) {
	fs.StringVar(&f.configPath, "config", "", "agent configuration file (YAML): id, model_roots, deployments, telemetry")
	fs.StringVar(&f.natsURL, "nats-url", "", "NATS URL of the controller, e.g. nats://controller:4222, or a comma-separated list of a NATS cluster's nodes (overrides the config)")
	fs.StringVar(&f.natsCreds, "nats-credentials", "", "`FILE` with the agent's NATS credentials, from vlmfleet agent-creds create ID (overrides the config)")
	fs.StringVar(&f.natsCA, "nats-ca", "", "`FILE` with the CA the controller's TLS certificate is signed by: a copy of its <data-dir>/tls/ca.pem (overrides the config)")
	fs.StringVar(&f.natsPin, "nats-ca-pin", "", "trust the controller's CA by its fingerprint, sha256:... as the controller logs it (overrides the config)")
	fs.StringVar(&f.id, "id", "", "agent id (default: from the config, else the hostname)")
	fs.StringVar(&f.simulate, "simulate", "", "simulate a `DEVICE` and its engines, e.g. \"Jetson AGX Orin\" (results are labelled simulated); with --join it joins a controller as a lab device does (README: Rehearse a lab on one machine)")
	fs.StringVar(&f.simModels, "sim-models", "", "with --simulate: comma-separated model names to offer (default: every calibrated profile)")
	fs.Float64Var(&f.speedup, "sim-speedup", 1, "with --simulate: run the simulated engine this many times faster than the device (times are scaled back and recorded)")
	fs.StringVar(&f.logDir, "log-dir", "", "directory for engine logs (default: the system temp dir)")
	fs.StringVar(&f.join, "join", "", "join the controller with this `JOIN_STRING`, from vlmfleet join-token create (or $"+envJoin+"): enrol, write the credentials, then run; later starts need it no more")
	fs.StringVar(&f.spoolDir, "spool-dir", "", "`DIR` for the messages not yet acknowledged by the controller, and beside it the credentials a join writes (overrides the config; default <log-dir>/spool/ID)")
	fs.StringVar(&f.labels, "labels", "", "the agent's labels, `k=v,...`, which a sweep's agent_labels select by (overrides the config's)")
	fs.BoolVar(&f.joinOnly, "join-only", false, "with --join: enrol and write the credentials, then exit instead of running (deploy/install.sh agent --join does this)")
}

// config is the agent's configuration: the file's or the simulated
// device's, with the flags over it.
func (f *agentFlags) config() (agent.Config, error) {
	var cfg agent.Config
	switch {
	case f.configPath != "" && f.simulate != "":
		// A simulated device would label the real engines of the config as
		// simulated, on a device they do not run on.
		return cfg, usageError{fmt.Errorf("--config and --simulate exclude each other; to simulate %q from a config, make each of its deployments "+
			"engine: {kind: sim, sim_device: %s, sim_model: ..., sim_quantization: ..., sim_engine: ...} (docs/engines.md, sim): "+
			"the agent then announces that device, simulated, with its power modes", f.simulate, f.simulate)}
	case f.configPath != "":
		var err error
		if cfg, err = agent.LoadConfig(f.configPath); err != nil {
			return cfg, err
		}
	case f.simulate == "":
		return cfg, usageError{fmt.Errorf("need --config FILE (a lab device) or --simulate DEVICE (one of: %s)", strings.Join(agent.SimulatedDevices(), ", "))}
	default:
		if err := f.simulated(&cfg); err != nil {
			return cfg, err
		}
	}
	return cfg, f.override(&cfg)
}

// simulated gives cfg the simulated device's deployments.
func (f *agentFlags) simulated(cfg *agent.Config) error {
	if f.speedup < 1 {
		return usageError{fmt.Errorf("--sim-speedup %g: want 1 or more", f.speedup)}
	}
	var models []string
	if f.simModels != "" {
		models = strings.Split(f.simModels, ",")
	}
	deps, err := agent.SimulatedDeployments(f.simulate, f.speedup, models...)
	if err != nil {
		return usageError{err}
	}
	cfg.Deployments = append(cfg.Deployments, deps...)
	cfg.Simulate = f.simulate
	cfg.SimSpeedup = f.speedup
	if f.id == "" {
		cfg.ID = strings.Trim("sim-"+agent.DeploymentID(f.simulate, "", ""), "-")
	}
	return nil
}

// override sets what the flags give over cfg.
func (f *agentFlags) override(cfg *agent.Config) error {
	cfg.NATSURL = cmp.Or(f.natsURL, cfg.NATSURL)
	cfg.NATSCredentials = cmp.Or(f.natsCreds, cfg.NATSCredentials)
	cfg.NATSCA, cfg.NATSCAPin = cmp.Or(f.natsCA, cfg.NATSCA), cmp.Or(f.natsPin, cfg.NATSCAPin)
	cfg.ID = cmp.Or(f.id, cfg.ID)
	cfg.LogDir = cmp.Or(f.logDir, cfg.LogDir)
	cfg.SpoolDir = cmp.Or(f.spoolDir, cfg.SpoolDir)
	if f.labels != "" {
		l, err := protocol.ParseLabels("--labels", f.labels)
		if err != nil {
			return usageError{err}
		}
		cfg.Labels = l
	}
	return nil
}
