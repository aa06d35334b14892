package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/rs/zerolog"

	"github.com/vlmfleet/vlmfleet/agent/imageset"
	"github.com/vlmfleet/vlmfleet/cmd/vlmfleet/internal/termprogress"
	"github.com/vlmfleet/vlmfleet/controller"
	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/explorer"
	"github.com/vlmfleet/vlmfleet/explorer/profiles"
	"github.com/vlmfleet/vlmfleet/harness/simlab"
	"github.com/vlmfleet/vlmfleet/protocol"
)

type demoFlags struct {
	httpAddr, dataDir string
	speedup           float64
	requests          int
	exit              bool
	// search and frameInterval add the buyer's answer to the published
	// ladder: exact figures and cameras on a frame clock.
	search        searchFlag
	frameInterval string
	intervals     []float64
	// profiles runs the latency and throughput demo instead: NVIDIA's
	// published vision NIM tables measured on simulated data-center GPUs.
	profiles bool
}

func parseDemoFlags(c *cli, args []string) (demoFlags, error) {
	var f demoFlags
	fs := newFlagSet(c, "demo")
	fs.StringVar(&f.httpAddr, "http", "127.0.0.1:8080", "address to serve the explorer and the API on")
	fs.Float64Var(&f.speedup, "speedup", 0, "run every simulated engine this many times faster than its device (default: 40 for the Jetsons, 10 for the RTX PRO 6000; times are scaled back and results labelled simulated)")
	fs.IntVar(&f.requests, "requests", 0, "measured requests per camera level (default: as the seed, 8 on a Jetson and 24 on RTX PRO 6000)")
	fs.StringVar(&f.dataDir, "data-dir", "", "keep the demo's store here (default: a temporary directory, removed on exit)")
	fs.BoolVar(&f.exit, "exit-when-done", false, "stop once the sweep is done instead of serving until Ctrl-C")
	fs.Var(&f.search, "search", fmt.Sprintf("after each ladder, search for the exact Max Cameras: --search alone up to %d cameras, --search=N up to N", protocol.DefaultSearchCeiling))
	fs.StringVar(&f.frameInterval, "frame-interval", "", "also measure every camera level with each camera sending one frame every `SECONDS` (a list, e.g. 5)")
	fs.BoolVar(&f.profiles, "profiles", false, "instead of the cameras, measure NVIDIA's published latency and throughput tables (Llama 3.2 Vision, nemoretriever-parse) on simulated H100, A100, L40S and A10G hosts and show them beside the published lines")
	if err := parseFlags(fs, args); err != nil {
		return f, err
	}
	if fs.NArg() > 0 {
		return f, usageError{fmt.Errorf("unexpected arguments %q%s", fs.Args(), searchArgHint(fs))}
	}
	if f.profiles && (f.search.ceiling != 0 || f.frameInterval != "" || f.requests != 0 || f.speedup != 0) {
		return f, usageError{fmt.Errorf("--profiles measures the published tables as they were measured; it takes none of --search, --frame-interval, --requests, --speedup")}
	}
	if err := f.search.check(); err != nil {
		return f, usageError{err}
	}
	top := 0
	for _, d := range simlab.Demo() {
		top = max(top, slices.Max(d.Cameras))
	}
	if s := f.search.ceiling; s != 0 && s < top {
		return f, usageError{fmt.Errorf("--search=%d: the demo's ladder goes up to %d cameras; want %d up to %d", s, top, top, protocol.MaxCameraLevel)}
	}
	intervals, err := listFlag("frame-interval", frameIntervals, f.frameInterval)
	if err != nil {
		return f, usageError{err}
	}
	f.intervals = intervals
	if f.speedup != 0 && f.speedup < 1 {
		return f, usageError{fmt.Errorf("--speedup %g: want 1 or more", f.speedup)}
	}
	if f.requests < 0 {
		return f, usageError{fmt.Errorf("--requests %d: want 1 or more", f.requests)}
	}
	return f, nil
}

func cmdDemo(ctx context.Context, c *cli, args []string) error {
	f, err := parseDemoFlags(c, args)
	if err != nil {
		return err
	}
	if f.dataDir == "" {
		tmp, err := os.MkdirTemp("", "vlmfleet-demo-")
		if err != nil {
			return fmt.Errorf("demo data dir: %w", err)
		}
		defer os.RemoveAll(tmp)
		f.dataDir = tmp
	}
	lab, err := startDemoLab(ctx, c, f)
	if err != nil {
		return err
	}
	defer lab.Close()
	if err := runDemo(ctx, c, lab, f); err != nil {
		return err
	}
	url := lab.Controller().HTTPURL()
	if f.profiles {
		fmt.Fprintf(c.stdout, "\nLatency & throughput: %s/profiles   Live: %s/live   API: %s/api/explorer/profiles\n", url, url, url)
	} else {
		fmt.Fprintf(c.stdout, "\nExplorer: %s   Live: %s/live   API: %s/api/runs\n", url, url, url)
	}
	fmt.Fprintf(c.stdout, "API token (changes need it): vlmfleet sweep --controller %s --token-file %s\n", url, lab.Controller().APITokenFile())
	fmt.Fprintf(c.stdout, "NATS (for more agents): %s\n", protocol.RedactURL(lab.Controller().NATSURL()))
	if f.exit {
		return nil
	}
	fmt.Fprintln(c.stdout, "Serving until Ctrl-C.")
	<-ctx.Done()
	return nil
}

// runDemo measures the demo's lab and prints its answer: the cameras'
// (sweepDemo), or with --profiles the published tables' reproduction.
func runDemo(ctx context.Context, c *cli, lab *simlab.Lab, f demoFlags) error {
	if f.profiles {
		hosts, err := demoProfileHosts()
		if err != nil {
			return err
		}
		return runProfileDemo(ctx, c, lab, hosts)
	}
	if err := sweepDemo(ctx, c, lab, f); err != nil {
		return err
	}
	runs, err := lab.Controller().RunSummaries(ctx)
	if err != nil {
		return fmt.Errorf("read results: %w", err)
	}
	return writeAnswers(c.stdout, "SIMULATED results", explorer.Aggregate(runs, time.Now()), explorer.DefaultQuery(), f.intervals)
}

// startDemoLab starts the controller and the demo's three agents.
func startDemoLab(ctx context.Context, c *cli, f demoFlags) (*simlab.Lab, error) {
	// One picture set for the three agents, prepared before any timing
	// starts, so that no agent's measurement competes with it; drawn once
	// and kept in the cache directory.
	cache := imageset.CacheDir(c.getenv)
	began := time.Now()
	images, err := simlab.Pictures(cache)
	if err != nil {
		return nil, err
	}
	c.log.Info().Str("took", time.Since(began).Round(time.Millisecond).String()).Str("cache", cache).
		Msg("the sixteen pictures are ready at 480p, 720p, 1080p and 2K")
	// The parts log only what goes wrong, so that the progress bars stay
	// readable; VLMFLEET_LOG_LEVEL=debug shows everything.
	quiet := c.log
	if c.getenv("VLMFLEET_LOG_LEVEL") == "" {
		quiet = c.log.Level(zerolog.WarnLevel)
	}
	lab, err := simlab.Start(ctx, simlab.Options{
		DataDir: f.dataDir, HTTPAddr: f.httpAddr, Log: quiet,
		Version: c.version, Getenv: c.getenv, Images: images,
	})
	if err != nil {
		return nil, err
	}
	url := lab.Controller().HTTPURL()
	c.log.Info().Str("explorer", url).Str("live", url+"/live").Str("nats", protocol.RedactURL(lab.Controller().NATSURL())).
		Msg("controller up (embedded NATS)")
	devices, err := demoDevices(f)
	if err != nil {
		_ = lab.Close()
		return nil, err
	}
	for _, d := range devices {
		if _, err := lab.AddAgent(ctx, d); err != nil {
			_ = lab.Close()
			return nil, err
		}
	}
	return lab, nil
}

// demoDevices are the demo's agents: the seed's three devices, or with
// --profiles a data-center host per GPU of the published tables.
func demoDevices(f demoFlags) ([]simlab.Device, error) {
	var out []simlab.Device
	if f.profiles {
		hosts, err := demoProfileHosts()
		if err != nil {
			return nil, err
		}
		for _, h := range hosts {
			out = append(out, h.Device)
		}
		return out, nil
	}
	for _, d := range simlab.Demo() {
		if f.speedup != 0 {
			d.Speedup = f.speedup
		}
		out = append(out, d.Device)
	}
	return out, nil
}

// demoProfileHosts are the profile demo's hosts, from the published lines
// built into the binary.
func demoProfileHosts() ([]simlab.ProfileHost, error) {
	published, err := profiles.Published()
	if err != nil {
		return nil, err
	}
	return simlab.ProfileDemo(published)
}

// sweepDemo sweeps every demo device and draws the progress until all is measured.
func sweepDemo(ctx context.Context, c *cli, lab *simlab.Lab, f demoFlags) error {
	// Nothing else writes to the terminal while the bars are drawn.
	c.log.Info().Msg("sweeping 3 simulated devices: Jetson Orin NX, Jetson AGX Orin (in MAXN, and one model in MODE_30W too), RTX PRO 6000")
	bars := termprogress.New(c.stderr, c.tty)
	stop := lab.Controller().OnEvent(drawProgress(ctx, lab.Controller(), bars))
	defer stop()
	var sweeps []protocol.Sweep
	for _, d := range simlab.Demo() {
		w := protocol.DefaultWorkload()
		w.Cameras = d.Cameras
		w.RequestsPerLevel = d.Requests
		if f.requests > 0 {
			w.RequestsPerLevel = f.requests
		}
		w.Search, w.FrameIntervalSec = f.search.ceiling, f.intervals
		planned, err := d.Sweeps(w)
		if err != nil {
			bars.Close()
			return err
		}
		for _, p := range planned {
			s, err := lab.Submit(ctx, p)
			if err != nil {
				bars.Close()
				return err
			}
			sweeps = append(sweeps, s)
		}
	}
	started := time.Now()
	err := lab.Wait(ctx, sweeps...)
	bars.Close()
	if err != nil {
		return err
	}
	c.log.Info().Str("took", time.Since(started).Round(time.Second).String()).Msg("demo sweep done")
	return nil
}

// drawProgress draws each progress event as a bar labelled with the agent
// and the deployment of the job. Events come from one goroutine, so the
// labels need no lock; a job's is read from the store the first time.
func drawProgress(ctx context.Context, ctrl *controller.Controller, bars *termprogress.Bars) func(api.Event) {
	labels := map[string]string{}
	return func(ev api.Event) {
		p, ok := ev.Data.(protocol.Progress)
		if !ok {
			return
		}
		who, ok := labels[p.JobID]
		if !ok {
			who = p.AgentID
			if j, err := ctrl.Job(ctx, p.JobID); err == nil {
				who += " " + j.Deployment
			}
			labels[p.JobID] = who
		}
		bars.Progress(p.JobID, who, p)
	}
}
