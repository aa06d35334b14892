package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/vlmfleet/vlmfleet/agent/devicefacts"
	"github.com/vlmfleet/vlmfleet/agent/telemetry"
	"github.com/vlmfleet/vlmfleet/protocol"
)

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
	root := *sysroot
	if root == "" {
		root = c.getenv("VLMFLEET_SYSROOT")
	}
	root = devicefacts.SysRootOr(root)
	path := c.getenv("PATH")

	var facts protocol.DeviceFacts
	src := *source
	if *simulate != "" {
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
		rep.Sample, sampleErr = oneSample(ctx, sampler, *timeout)
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
		printDevice(c.stdout, rep)
	}
	if sampleErr != nil {
		return fmt.Errorf("telemetry: %w", sampleErr)
	}
	return nil
}

// oneSample runs the sampler until its first sample.
func oneSample(ctx context.Context, s *telemetry.Sampler, timeout time.Duration) (*protocol.TelemetrySample, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	got := make(chan protocol.TelemetrySample, 1)
	runErr := s.Run(ctx, func(smp protocol.TelemetrySample) {
		select {
		case got <- smp:
			cancel()
		default:
		}
	})
	select {
	case smp := <-got:
		return &smp, nil
	default:
	}
	if runErr != nil {
		return nil, runErr
	}
	if err := ctx.Err(); errors.Is(err, context.DeadlineExceeded) {
		return nil, fmt.Errorf("no sample from %s within %v", s.Source(), timeout)
	}
	return nil, fmt.Errorf("no sample from %s: %w", s.Source(), context.Cause(ctx))
}

func printDevice(w io.Writer, r deviceReport) {
	f := r.Device
	fmt.Fprintf(w, "Device:   %s (%s)\n", f.Name, f.Kind)
	if j := f.Jetson; j != nil {
		fmt.Fprintf(w, "Jetson:   %s\n", j.Model)
		fmt.Fprintf(w, "          L4T %s, JetPack %s, power mode %s, clocks pinned %s, %d MB\n",
			orDash(j.L4T), orDash(j.JetPack), orDash(j.PowerMode), yesNo(j.ClocksPinned), j.MemoryMB)
	}
	for _, g := range f.GPUs {
		fmt.Fprintf(w, "GPU %d:    %s (%s)\n", g.Index, g.Name, devicefacts.GPUDisplayName(g.Name, g.MaxPowerLimitW))
		fmt.Fprintf(w, "          driver %s, CUDA %s, %d MiB, power limit %.0f W (max %.0f W), compute %s\n",
			orDash(g.Driver), orDash(g.CUDA), g.MemoryMB, g.DefaultPowerLimitW, g.MaxPowerLimitW, orDash(g.ComputeCap))
	}
	h := f.Host
	fmt.Fprintf(w, "Host:     %s: %s, %d cores, %d MB RAM, %s, kernel %s, %s\n",
		orDash(h.Hostname), orDash(h.CPUModel), h.Cores, h.MemoryMB, orDash(h.OS), orDash(h.Kernel), h.Arch)
	for _, warn := range f.Warnings {
		fmt.Fprintf(w, "Warning:  %s\n", warn)
	}
	if r.Sample == nil {
		fmt.Fprintf(w, "Sample:   none from %s: %s\n", orDash(r.Source), r.Error)
		return
	}
	s := r.Sample
	fmt.Fprintf(w, "Sample:   %s at %s\n", r.Source, s.Time.Format(time.RFC3339Nano))
	fmt.Fprintf(w, "          GPU %s %%, power %s W, temp %s C, memory %s/%s MB, CPU %s %%\n",
		num(s.GPUUtil, 1), num(s.PowerW, 2), num(s.TempC, 1), num(s.MemUsedMB, 0), num(s.MemTotalMB, 0), num(s.CPUUtil, 1))
	fmt.Fprintf(w, "          agent CPU %s %%, RSS %s MB, throttle %s\n",
		num(s.AgentCPU, 1), num(s.AgentRSSMB, 1), orDash(strings.Join(s.Throttle, ",")))
	if len(s.Rails) > 0 {
		names := make([]string, 0, len(s.Rails))
		for n := range s.Rails {
			names = append(names, n)
		}
		sort.Strings(names)
		parts := make([]string, len(names))
		for i, n := range names {
			parts[i] = fmt.Sprintf("%s %.3f W", n, s.Rails[n])
		}
		fmt.Fprintf(w, "Rails:    %s\n", strings.Join(parts, ", "))
	}
}

func num(p *float64, decimals int) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprintf("%.*f", decimals, *p)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func yesNo(b *bool) string {
	switch {
	case b == nil:
		return "unknown"
	case *b:
		return "yes"
	}
	return "no"
}
