package simlab_test

import (
	"math"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/controller/sweepfile"
	"github.com/vlmfleet/vlmfleet/explorer/profiles"
	"github.com/vlmfleet/vlmfleet/harness/simlab"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// Every published line has a sweep that measures it, on a host of its GPU
// offering its configuration, and every sweep is one the controller takes.
func TestProfileDemoMeasuresEveryPublishedLine(t *testing.T) {
	published, err := profiles.Published()
	if err != nil {
		t.Fatal(err)
	}
	hosts, err := simlab.ProfileDemo(published)
	if err != nil {
		t.Fatal(err)
	}
	type series struct {
		gpu, deployment string
		lengths         protocol.LengthPair
	}
	measured := map[series]bool{}
	for _, h := range hosts {
		offered := map[string]bool{}
		for _, d := range h.Deployments {
			offered[d.ID] = true
			if d.Engine.SimDevice != h.Device.Device || d.Engine.SimSpeedup < 1 {
				t.Errorf("%s: deployment %s simulates %q at %gx", h.ID, d.ID, d.Engine.SimDevice, d.Engine.SimSpeedup)
			}
		}
		for _, s := range h.Sweeps {
			if err := sweepfile.Check(s); err != nil {
				t.Errorf("%s: %v", s.Name, err)
			}
			if len(s.Deployments) != 1 || !offered[s.Deployments[0]] {
				t.Errorf("%s: deployments %v, not offered by %s", s.Name, s.Deployments, h.ID)
				continue
			}
			for _, l := range s.Workload.Profile.Lengths {
				measured[series{h.Device.Device, s.Deployments[0], l}] = true
			}
		}
	}
	lines := 0
	for _, r := range published {
		found := false
		for s := range measured {
			if s.gpu == r.GPU && s.lengths == (protocol.LengthPair{ISL: isl(r), OSL: r.OSL}) {
				found = true
			}
		}
		if !found {
			t.Errorf("no sweep measures %s %s TP%d on %s at ISL %d OSL %d", r.Model, r.Precision, r.TP, r.GPU, isl(r), r.OSL)
		}
		lines++
	}
	if lines != 65 {
		t.Errorf("%d published lines, want the seed's 65", lines)
	}
}

// One published configuration measured through the whole lab (agent,
// engine, controller, store) comes back within the bounds of its
// published lines: Min Latency within 10 %, Max Throughput's request
// throughput within 15 %.
//
// It checks figures, not concurrency: under the race detector, which
// slows the handling of its megabytes of pictures tenfold, it is left to
// the plain run of the suite.
func TestProfileDemoReproducesAPublishedTable(t *testing.T) {
	if raceDetector {
		t.Skip("figures, not concurrency: run without -race (./scripts/test does so first)")
	}
	published, err := profiles.Published()
	if err != nil {
		t.Fatal(err)
	}
	var first []protocol.ProfileRow
	for _, r := range published {
		if r.Model == "Llama-3.2-11B-Vision-Instruct" && r.GPU == "H100-HBM3-80GB" && r.Precision == "FP8" {
			first = append(first, r)
		}
	}
	hosts, err := simlab.ProfileDemo(first)
	if err != nil {
		t.Fatal(err)
	}
	if len(hosts) != 1 || len(hosts[0].Sweeps) != 1 {
		t.Fatalf("%d hosts, want one with one sweep", len(hosts))
	}
	l := newLab(t, testContext(t, 4*time.Minute), simlab.Options{})
	if _, err := l.AddAgent(l.ctx, hosts[0].Device); err != nil {
		t.Fatal(err)
	}
	s, err := l.Submit(l.ctx, hosts[0].Sweeps[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Wait(l.ctx, s); err != nil {
		t.Fatal(err)
	}
	runs, err := l.Controller().RunSummaries(l.ctx)
	if err != nil {
		t.Fatal(err)
	}
	measured, skipped := profiles.Measured(runs)
	if len(skipped) > 0 {
		t.Errorf("measured lines left out: %v", skipped)
	}
	for _, line := range profiles.Join(first, measured) {
		if line.Published == nil {
			continue
		}
		if line.Measured == nil {
			t.Errorf("%s: not measured", line.Published.Profile)
			continue
		}
		if !line.Measured.Simulated {
			t.Errorf("%s: the measured line is not marked simulated", line.Published.Profile)
		}
		d := line.Diff()
		t.Logf("%s: TTFT %v, ITL %v, latency %v, throughput %v (%% from published); %s", line.Published.Profile,
			pctText(d.TTFT), pctText(d.ITL), pctText(d.RequestLatency), pctText(d.RequestThroughput), line.Measured.Note)
		if line.Published.Profile == protocol.ProfileMinLatency {
			for name, v := range map[string]*float64{"TTFT": d.TTFT, "ITL": d.ITL, "latency": d.RequestLatency} {
				if v == nil || math.Abs(*v) > 10 {
					t.Errorf("min latency %s: %v %% from the published figure, want within 10 %%", name, pctText(v))
				}
			}
		} else if v := d.RequestThroughput; v == nil || math.Abs(*v) > 15 {
			t.Errorf("max throughput request throughput: %v %% from the published figure, want within 15 %%", pctText(v))
		}
	}
}

func isl(r protocol.ProfileRow) int {
	if r.ISL == nil {
		return 0
	}
	return *r.ISL
}

func pctText(v *float64) any {
	if v == nil {
		return "none"
	}
	return math.Round(*v*10) / 10
}
