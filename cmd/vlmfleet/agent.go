package main

import (
	"cmp"
	"context"
	"fmt"
	"strings"

	"github.com/vlmfleet/vlmfleet/agent"
	"github.com/vlmfleet/vlmfleet/protocol"
)

func cmdAgent(ctx context.Context, c *cli, args []string) error {
	fs := newFlagSet(c, "agent")
	configPath := fs.String("config", "", "agent configuration file (YAML): id, model_roots, deployments, telemetry")
	natsURL := fs.String("nats-url", "", "NATS URL of the controller, e.g. nats://controller:4222, or a comma-separated list of a NATS cluster's nodes (overrides the config)")
	natsCreds := fs.String("nats-credentials", "", "`FILE` with the agent's NATS credentials, from vlmfleet agent-creds create ID (overrides the config)")
	natsCA := fs.String("nats-ca", "", "`FILE` with the CA the controller's TLS certificate is signed by: a copy of its <data-dir>/tls/ca.pem (overrides the config)")
	natsPin := fs.String("nats-ca-pin", "", "trust the controller's CA by its fingerprint, sha256:... as the controller logs it (overrides the config)")
	id := fs.String("id", "", "agent id (default: from the config, else the hostname)")
	simulate := fs.String("simulate", "", "simulate a `DEVICE` and its engines, e.g. \"Jetson AGX Orin\" (results are labelled simulated); with --join it joins a controller as a lab device does (README: Rehearse a lab on one machine)")
	simModels := fs.String("sim-models", "", "with --simulate: comma-separated model names to offer (default: every calibrated profile)")
	speedup := fs.Float64("sim-speedup", 1, "with --simulate: run the simulated engine this many times faster than the device (times are scaled back and recorded)")
	logDir := fs.String("log-dir", "", "directory for engine logs (default: the system temp dir)")
	join := fs.String("join", "", "join the controller with this `JOIN_STRING`, from vlmfleet join-token create (or $"+envJoin+"): enrol, write the credentials, then run; later starts need it no more")
	spoolDir := fs.String("spool-dir", "", "`DIR` for the messages not yet acknowledged by the controller, and beside it the credentials a join writes (overrides the config; default <log-dir>/spool/ID)")
	labels := fs.String("labels", "", "the agent's labels, `k=v,...`, which a sweep's agent_labels select by (overrides the config's)")
	joinOnly := fs.Bool("join-only", false, "with --join: enrol and write the credentials, then exit instead of running (deploy/install.sh agent --join does this)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	var cfg agent.Config
	switch {
	case *configPath != "" && *simulate != "":
		// A simulated device would label the real engines of the config as
		// simulated, on a device they do not run on.
		return usageError{fmt.Errorf("--config and --simulate exclude each other; to simulate %q from a config, make each of its deployments "+
			"engine: {kind: sim, sim_device: %s, sim_model: ..., sim_quantization: ..., sim_engine: ...} (docs/engines.md, sim): "+
			"the agent then announces that device, simulated, with its power modes", *simulate, *simulate)}
	case *configPath != "":
		var err error
		if cfg, err = agent.LoadConfig(*configPath); err != nil {
			return err
		}
	case *simulate == "":
		return usageError{fmt.Errorf("need --config FILE (a lab device) or --simulate DEVICE (one of: %s)", strings.Join(agent.SimulatedDevices(), ", "))}
	}
	if *simulate != "" {
		if *speedup < 1 {
			return usageError{fmt.Errorf("--sim-speedup %g: want 1 or more", *speedup)}
		}
		var models []string
		if *simModels != "" {
			models = strings.Split(*simModels, ",")
		}
		deps, err := agent.SimulatedDeployments(*simulate, *speedup, models...)
		if err != nil {
			return usageError{err}
		}
		cfg.Deployments = append(cfg.Deployments, deps...)
		cfg.Simulate = *simulate
		cfg.SimSpeedup = *speedup
		if cfg.ID == "" && *id == "" {
			cfg.ID = "sim-" + agent.DeploymentID(*simulate, "", "")
			cfg.ID = strings.Trim(cfg.ID, "-")
		}
	}
	if *natsURL != "" {
		cfg.NATSURL = *natsURL
	}
	if *natsCreds != "" {
		cfg.NATSCredentials = *natsCreds
	}
	cfg.NATSCA, cfg.NATSCAPin = cmp.Or(*natsCA, cfg.NATSCA), cmp.Or(*natsPin, cfg.NATSCAPin)
	if *id != "" {
		cfg.ID = *id
	}
	if *logDir != "" {
		cfg.LogDir = *logDir
	}
	if *spoolDir != "" {
		cfg.SpoolDir = *spoolDir
	}
	if *labels != "" {
		l, err := protocol.ParseLabels("--labels", *labels)
		if err != nil {
			return usageError{err}
		}
		cfg.Labels = l
	}
	cfg, err := joinOrApply(ctx, c, cfg, cmp.Or(*join, c.getenv(envJoin)), *joinOnly)
	if err != nil || *joinOnly {
		return err
	}
	a, err := agent.New(cfg, agent.Options{Log: c.log, Version: c.version, Getenv: c.getenv})
	if err != nil {
		return err
	}
	return a.Run(ctx)
}
