package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/vlmfleet/vlmfleet/agent"
	"github.com/vlmfleet/vlmfleet/agent/imageset"
	"github.com/vlmfleet/vlmfleet/controller"
	"github.com/vlmfleet/vlmfleet/explorer"
	"github.com/vlmfleet/vlmfleet/internal/termprogress"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// demoDevice is one simulated lab device of the demo, with the camera levels
// the seed measured on that kind of device.
type demoDevice struct {
	id      string
	device  string
	models  []string
	cameras []int
	// speedup compresses the device's time. A fast device runs at a lower
	// speed-up: its response times are a few hundred milliseconds, and a
	// millisecond of real overhead would be multiplied by the speed-up.
	speedup float64
	// requests per camera level, as the seed measured: 8 on a Jetson, 24 on
	// RTX PRO 6000.
	requests int
}

func demoLab() []demoDevice {
	return []demoDevice{
		{id: "sim-orin-nx", device: "Jetson Orin NX", models: []string{"Cosmos-Reason2-2B", "Gemma-4-E2B-it"}, cameras: []int{1, 2, 4}, speedup: 40, requests: 8},
		{id: "sim-agx-orin", device: "Jetson AGX Orin", models: []string{"Cosmos3-Edge", "Qwen3-VL-4B-Instruct"}, cameras: []int{1, 2, 4, 8}, speedup: 40, requests: 8},
		{id: "sim-rtx-pro-6000", device: "RTX PRO 6000", models: []string{"Qwen3-VL-4B-Instruct"}, cameras: []int{1, 2, 4, 8, 16}, speedup: 10, requests: 24},
	}
}

func cmdDemo(ctx context.Context, c *cli, args []string) error {
	fs := newFlagSet(c, "demo")
	httpAddr := fs.String("http", "127.0.0.1:8080", "address to serve the explorer and the API on")
	speedup := fs.Float64("speedup", 0, "run every simulated engine this many times faster than its device (default: 40 for the Jetsons, 10 for the RTX PRO 6000; times are scaled back and results labelled simulated)")
	requests := fs.Int("requests", 0, "measured requests per camera level (default: as the seed, 8 on a Jetson and 24 on RTX PRO 6000)")
	dataDir := fs.String("data-dir", "", "keep the demo's store here (default: a temporary directory, removed on exit)")
	exit := fs.Bool("exit-when-done", false, "stop once the sweep is done instead of serving until Ctrl-C")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *speedup != 0 && *speedup < 1 {
		return usageError{fmt.Errorf("--speedup %g: want 1 or more", *speedup)}
	}
	if *requests < 0 {
		return usageError{fmt.Errorf("--requests %d: want 1 or more", *requests)}
	}
	dir := *dataDir
	if dir == "" {
		tmp, err := os.MkdirTemp("", "vlmfleet-demo-")
		if err != nil {
			return fmt.Errorf("demo data dir: %w", err)
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}

	// The parts log only what goes wrong, so that the progress bars stay
	// readable; VLMFLEET_LOG_LEVEL=debug shows everything.
	quiet := c.log
	if c.getenv("VLMFLEET_LOG_LEVEL") == "" {
		quiet = c.log.Level(zerolog.WarnLevel)
	}
	ctrl, err := controller.New(controller.Options{
		DataDir:    dir,
		NATSListen: "127.0.0.1:-1",
		HTTPAddr:   *httpAddr,
		Log:        quiet.With().Str("component", "controller").Logger(),
		Version:    c.version,
		Explorer:   explorerHandler(quiet),
	})
	if err != nil {
		return err
	}
	defer ctrl.Close()
	if err := ctrl.Start(ctx); err != nil {
		return fmt.Errorf("start controller: %w", err)
	}
	c.log.Info().Str("explorer", ctrl.HTTPURL()).Str("live", ctrl.HTTPURL()+"/live").Msg("controller up (embedded NATS)")

	// One picture set for the three agents, drawn and encoded before any
	// timing starts, so that no agent's measurement competes with it.
	c.log.Info().Msg("drawing the sixteen pictures at 480p, 720p, 1080p and 2K")
	images, err := imageset.Builtin()
	if err != nil {
		return err
	}
	for _, s := range protocol.ImageSizes() {
		if _, err := images.DataURL(s.Name, 0); err != nil {
			return fmt.Errorf("prepare the %s pictures: %w", s.Name, err)
		}
	}

	agentCtx, stopAgents := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { stopAgents(); wg.Wait() }()
	lab := demoLab()
	for _, d := range lab {
		if *speedup != 0 {
			d.speedup = *speedup
		}
		deps, err := agent.SimulatedDeployments(d.device, d.speedup, d.models...)
		if err != nil {
			return err
		}
		a, err := agent.New(agent.Config{
			ID: d.id, NATSURL: ctrl.NATSURL(), Deployments: deps,
			Simulate: d.device, SimSpeedup: d.speedup, LogDir: dir,
		}, agent.Options{Log: quiet.With().Str("component", "agent").Logger(), Version: c.version, Getenv: c.getenv, Images: images})
		if err != nil {
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := a.Run(agentCtx); err != nil {
				c.log.Error().Err(err).Str("agent", d.id).Msg("agent stopped")
			}
		}()
	}

	// Nothing else writes to the terminal while the bars are drawn.
	c.log.Info().Msg("sweeping 3 simulated devices: Jetson Orin NX, Jetson AGX Orin, RTX PRO 6000")
	bars := termprogress.New(c.stderr, c.tty)
	var deployments sync.Map // job id → deployment id, for the bars' labels
	cancelEvents := ctrl.OnEvent(func(ev controller.Event) {
		if p, ok := ev.Data.(protocol.Progress); ok {
			name, _ := deployments.Load(p.JobID)
			label, _ := name.(string)
			showProgress(bars, p, label)
		}
	})
	defer cancelEvents()

	var sweeps []protocol.Sweep
	for _, d := range lab {
		w := protocol.DefaultWorkload()
		w.Cameras = d.cameras
		w.RequestsPerLevel = d.requests
		if *requests > 0 {
			w.RequestsPerLevel = *requests
		}
		s, err := submitWhenReady(ctx, ctrl, protocol.Sweep{Name: "demo " + d.device, Agents: []string{d.id}, Workload: w})
		if err != nil {
			return err
		}
		for _, id := range s.Jobs {
			if j, err := ctrl.Job(ctx, id); err == nil {
				deployments.Store(id, j.Deployment)
			}
		}
		sweeps = append(sweeps, s)
	}

	started := time.Now()
	if err := waitSweeps(ctx, ctrl, sweeps); err != nil {
		bars.Close()
		return err
	}
	bars.Close()
	c.log.Info().Dur("took", time.Since(started).Round(time.Second)).Msg("demo sweep done")

	runs, err := ctrl.RunSummaries(ctx)
	if err != nil {
		return fmt.Errorf("read results: %w", err)
	}
	printDemoSummary(c, explorer.Aggregate(runs, time.Now()))
	fmt.Fprintf(c.stdout, "\nExplorer: %s   Live: %s/live   API: %s/api/runs\n", ctrl.HTTPURL(), ctrl.HTTPURL(), ctrl.HTTPURL())
	if *exit {
		return nil
	}
	fmt.Fprintln(c.stdout, "Serving until Ctrl-C.")
	<-ctx.Done()
	return nil
}

// submitWhenReady submits a sweep once its agent has announced itself: the
// controller only makes jobs for deployments an agent offers.
func submitWhenReady(ctx context.Context, ctrl *controller.Controller, s protocol.Sweep) (protocol.Sweep, error) {
	announced := make(chan struct{}, 1)
	cancel := ctrl.OnEvent(func(ev controller.Event) {
		if ev.Kind == "agent" {
			select {
			case announced <- struct{}{}:
			default:
			}
		}
	})
	defer cancel()
	deadline := time.After(30 * time.Second)
	for {
		out, err := ctrl.SubmitSweep(ctx, s)
		if err == nil {
			return out, nil
		}
		select {
		case <-ctx.Done():
			return protocol.Sweep{}, ctx.Err()
		case <-deadline:
			return protocol.Sweep{}, fmt.Errorf("submit %s: %w", s.Name, err)
		case <-announced:
		case <-time.After(time.Second):
		}
	}
}

func waitSweeps(ctx context.Context, ctrl *controller.Controller, sweeps []protocol.Sweep) error {
	changed := make(chan struct{}, 1)
	cancel := ctrl.OnEvent(func(ev controller.Event) {
		if ev.Kind == "state" {
			select {
			case changed <- struct{}{}:
			default:
			}
		}
	})
	defer cancel()
	for {
		done := true
		for _, s := range sweeps {
			st, err := ctrl.SweepStatus(ctx, s.ID)
			if err != nil {
				return err
			}
			done = done && st.Done
		}
		if done {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
		case <-time.After(2 * time.Second):
		}
	}
}

func showProgress(bars *termprogress.Bars, p protocol.Progress, deployment string) {
	who := p.AgentID
	if deployment != "" {
		who += " " + deployment
	}
	switch p.Phase {
	case protocol.PhaseDone:
		bars.Set(p.AgentID, who+" done", 1, 1, p.Message)
		return
	case protocol.PhaseEngineStart:
		bars.Set(p.AgentID, who+" starting engine", 0, 1, "")
		return
	}
	label := fmt.Sprintf("%s %s", who, p.Combo)
	if p.Phase == protocol.PhaseWarmup {
		label += " (warm-up)"
	}
	suffix := fmt.Sprintf("combination %d/%d", p.ComboIdx+1, p.ComboN)
	if p.MeanTTFT > 0 {
		suffix += fmt.Sprintf("  TTFT %.2f s", p.MeanTTFT)
	}
	bars.Set(p.AgentID, label, p.Done+p.Failed, p.Total, suffix)
}

func printDemoSummary(c *cli, ds explorer.Dataset) {
	fmt.Fprintln(c.stdout, "\nSIMULATED results: Max Cameras at 720p, one image per camera, 3 s target")
	fmt.Fprintf(c.stdout, "%-24s %-6s %-10s %-18s %9s %9s %s\n", "Model", "Quant", "Engine", "Device", "TTFT 1cam", "TPS", "Max Cameras")
	for _, r := range ds.Rows {
		ttft, tps := "-", "-"
		for _, p := range r.Points {
			if p.Size == "720p" && p.Images == 1 && p.Cameras == 1 {
				ttft, tps = fmt.Sprintf("%.2f s", p.TTFT), fmt.Sprintf("%.1f", p.TPS)
			}
		}
		n, plus := explorer.MaxCameras(r.Points, "720p", 1, 3)
		label := fmt.Sprint(n)
		if plus {
			label += "+"
		}
		fmt.Fprintf(c.stdout, "%-24s %-6s %-10s %-18s %9s %9s %s\n", trunc(r.Model, 24), r.Quantization, r.Engine, r.Device, ttft, tps, label)
	}
	for _, r := range ds.Rows {
		if len(r.Explanation) > 0 {
			fmt.Fprintf(c.stdout, "\n%s\n", strings.Join(r.Explanation, "\n"))
		}
	}
}

func trunc(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "…"
}
