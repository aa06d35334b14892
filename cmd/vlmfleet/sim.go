package main

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/vlmfleet/vlmfleet/agent/devicefacts"
	"github.com/vlmfleet/vlmfleet/agent/simengine"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// cmdSim serves one simulated engine profile on its own, for trying a client
// (or `vlmfleet bench`) against a device one does not have.
func cmdSim(ctx context.Context, c *cli, args []string) error {
	if len(args) > 0 && args[0] == "swarm" {
		return cmdSimSwarm(ctx, c, args[1:])
	}
	fs := newFlagSet(c, "sim")
	device := fs.String("device", "", `simulated device, e.g. "Jetson AGX Orin" (see --list)`)
	model := fs.String("model", "", "model, e.g. Qwen3-VL-4B-Instruct")
	quant := fs.String("quantization", "", "quantization (empty: the first profile of the model on the device)")
	engine := fs.String("engine", "", "engine: llama.cpp or vLLM (empty: the first)")
	tp := fs.Int("tp", 0, "tensor-parallel size: how many GPUs of a data-center device serve the model (0: 1)")
	listen := fs.String("listen", "127.0.0.1:8000", "address to serve the OpenAI-compatible API on")
	served := fs.String("served-name", "", "model name served at /v1/models (default: the model)")
	speedup := fs.Float64("speedup", 1, "divide every delay by this (1: real time)")
	seed := fs.Int64("seed", 1, "seed of the timing jitter")
	list := fs.Bool("list", false, "print the calibrated profiles and exit")
	powerMode := fs.String("power-mode", "", "a simulated Jetson's nvpmodel mode, e.g. 15W (default: the profile's, as published)")
	powerLimit := fs.Float64("power-limit", 0, "a simulated GPU host's power limit in `WATTS` (default: the board's)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected argument %q", fs.Arg(0))}
	}
	if *list {
		if err := simengine.WriteProfiles(c.stdout, simengine.Profiles()); err != nil {
			return err
		}
		dc, err := simengine.DataCenterProfiles()
		if err != nil {
			return err
		}
		fmt.Fprintln(c.stdout)
		return simengine.WriteDataCenterProfiles(c.stdout, dc)
	}
	if *device == "" || *model == "" {
		return usageError{errors.New("--device and --model are required (or --list)")}
	}
	if *speedup < 1 {
		return usageError{fmt.Errorf("--speedup %g: want 1 or more", *speedup)}
	}
	p, err := simengine.LookupTP(*device, *model, *quant, *engine, *tp)
	if err != nil {
		return usageError{err}
	}
	power, err := devicefacts.SimPowerFor(p.Device, protocol.PowerSetting{Mode: *powerMode, LimitW: *powerLimit})
	if err != nil {
		return usageError{fmt.Errorf("--power-mode/--power-limit: %w", err)}
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	s := simengine.New(p, simengine.Options{ServedName: *served, Speedup: *speedup, Seed: *seed, Log: c.log, GPUSlowdown: power.Slowdown})
	name := *served
	if name == "" {
		name = p.Model
	}
	c.log.Warn().Str("device", p.Device).Str("model", p.Model).Str("quantization", p.Quantization).
		Str("engine", p.Engine).Float64("speedup", *speedup).Str("served_name", name).Float64("gpu_slowdown", power.Slowdown).
		Str("url", "http://"+ln.Addr().String()+"/v1").
		Msg("SIMULATED engine serving: its timings are a model of the device, not a measurement")
	if err := s.Serve(ctx, ln); err != nil {
		return err
	}
	c.log.Info().Msg("SIMULATED engine stopped")
	return nil
}
