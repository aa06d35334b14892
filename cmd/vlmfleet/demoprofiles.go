package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/vlmfleet/vlmfleet/cmd/vlmfleet/internal/termprogress"
	"github.com/vlmfleet/vlmfleet/explorer/profiles"
	"github.com/vlmfleet/vlmfleet/harness/simlab"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// runProfileDemo measures every published configuration of NVIDIA's
// vision NIM tables on simulated data-center hosts, prints the tables with
// each simulated line under its published one, and says how far apart
// they are.
func runProfileDemo(ctx context.Context, c *cli, lab *simlab.Lab, hosts []simlab.ProfileHost) error {
	c.log.Info().Int("hosts", len(hosts)).Msg("measuring the published latency and throughput tables on simulated data-center GPUs")
	bars := termprogress.New(c.stderr, c.tty)
	stop := lab.Controller().OnEvent(drawProgress(ctx, lab.Controller(), bars))
	var sweeps []protocol.Sweep
	for _, h := range hosts {
		for _, p := range h.Sweeps {
			s, err := lab.Submit(ctx, p)
			if err != nil {
				stop()
				bars.Close()
				return err
			}
			sweeps = append(sweeps, s)
		}
	}
	started := time.Now()
	err := lab.Wait(ctx, sweeps...)
	stop()
	bars.Close()
	if err != nil {
		return err
	}
	c.log.Info().Str("took", time.Since(started).Round(time.Second).String()).Msg("profile demo done")
	runs, err := lab.Controller().RunSummaries(ctx)
	if err != nil {
		return fmt.Errorf("read results: %w", err)
	}
	published, err := profiles.Published()
	if err != nil {
		return err
	}
	measured, _ := profiles.Measured(runs)
	if err := profiles.WriteTables(c.stdout, append(published, measured...)); err != nil {
		return err
	}
	return writeReproduction(c.stdout, profiles.Join(published, measured))
}

// writeReproduction says how far the simulated lines are from the
// published ones: the largest difference of each table's figures.
func writeReproduction(w io.Writer, lines []profiles.Line) error {
	var minLat, maxTput float64
	var paired, missing int
	for _, l := range lines {
		if l.Published == nil {
			continue // a measured line no page publishes
		}
		if l.Measured == nil {
			missing++
			continue
		}
		paired++
		d := l.Diff()
		for _, v := range []*float64{d.TTFT, d.ITL, d.RequestLatency} {
			if v != nil && l.Published.Profile == protocol.ProfileMinLatency {
				minLat = max(minLat, math.Abs(*v))
			}
		}
		if v := d.RequestThroughput; v != nil && l.Published.Profile == protocol.ProfileMaxThroughput {
			maxTput = max(maxTput, math.Abs(*v))
		}
	}
	_, err := fmt.Fprintf(w, "\nSIMULATED reproduction of %d published lines (%d not measured): Min Latency figures within %.1f %%, "+
		"Max Throughput request throughput within %.1f %% of the published ones.\n", paired, missing, minLat, maxTput)
	return err
}
