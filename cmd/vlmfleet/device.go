package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/vlmfleet/vlmfleet/agent/devicefacts"
	"github.com/vlmfleet/vlmfleet/agent/telemetry"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// simulatedDeviceNames are the devices devicefacts.SimProfileFor knows.
var simulatedDeviceNames = []string{`"Jetson Orin NX"`, `"Jetson AGX Orin"`, `"Jetson Orin Nano"`, `"RTX PRO 6000"`, `"RTX PRO 6000 Max-Q"`}

// deviceReport is what `vlmfleet device --json` prints.
type deviceReport struct {
	Device protocol.DeviceFacts      `json:"device"`
	Sample *protocol.TelemetrySample `json:"sample"`
	Source string                    `json:"source"`
	// Error says why there is no sample.
	Error string `json:"error,omitempty"`
}

func cmdDevice(ctx context.Context, c *cli, args []string) error {
	fs := newFlagSet(c, "device")
	asJSON := fs.Bool("json", false, `print {"device":...,"sample":...,"source":...} as JSON`)
	sysroot := fs.String("sysroot", "", "read system files under `DIR` (default $VLMFLEET_SYSROOT, else /)")
	interval := fs.Duration("interval", 500*time.Millisecond, "telemetry sampling interval")
	source := fs.String("source", telemetry.SourceAuto, "telemetry source: auto, tegrastats, nvidia-smi, host or simulated")
	simulate := fs.String("simulate", "", "describe a simulated device of this `NAME` instead (\"Jetson AGX Orin\", \"RTX PRO 6000 Max-Q\")")
	timeout := fs.Duration("timeout", 15*time.Second, "give up waiting for the telemetry sample after this long")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected arguments %q", fs.Args())}
	}
	if *interval <= 0 || *timeout <= 0 {
		return usageError{errors.New("--interval and --timeout must be positive")}
	}
	root := devicefacts.SysRootOr(cmp.Or(*sysroot, c.getenv("VLMFLEET_SYSROOT")))
	path := c.getenv("PATH")

	var facts protocol.DeviceFacts
	src := *source
	if *simulate != "" {
		// Made-up telemetry for a device the simulator knows nothing of
		// would read as a real answer.
		if devicefacts.SimProfileFor(*simulate) == devicefacts.SimUnknown {
			return usageError{fmt.Errorf("--simulate %q: not a simulated device; known: %s", *simulate, strings.Join(simulatedDeviceNames, ", "))}
		}
		facts = devicefacts.Simulated(*simulate)
		if src == telemetry.SourceAuto {
			src = telemetry.SourceSimulated
		}
	} else {
		facts = devicefacts.Detect(ctx, devicefacts.Options{SysRoot: root, Path: path})
	}
	rep := deviceReport{Device: facts}
	sampler, err := telemetry.New(telemetry.Options{
		Source: src, Interval: *interval, SysRoot: root, Path: path,
		SimDevice: *simulate, Log: c.log,
	})
	var sampleErr error
	if err != nil {
		sampleErr = err
	} else {
		rep.Source = sampler.Source()
		rep.Sample, sampleErr = sampler.First(ctx, *timeout)
	}
	if sampleErr != nil {
		rep.Error = sampleErr.Error()
	}
	if *asJSON {
		enc := json.NewEncoder(c.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return fmt.Errorf("write device report: %w", err)
		}
	} else {
		devicefacts.WriteReport(c.stdout, rep.Device, rep.Sample, rep.Source, rep.Error)
	}
	if sampleErr != nil {
		return fmt.Errorf("telemetry: %w", sampleErr)
	}
	return nil
}
