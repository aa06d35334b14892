package swarm_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/vlmfleet/vlmfleet/controller/client"
	"github.com/vlmfleet/vlmfleet/harness/simlab"
	"github.com/vlmfleet/vlmfleet/harness/swarm"
	"github.com/vlmfleet/vlmfleet/internal/backoff"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// A swarm's agents are enrolled with credentials of their own, announce
// themselves, and each measures the job a sweep over all of them gives it.
func TestSwarmAgentsEnrolAnnounceAndMeasure(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	lab, err := simlab.Start(ctx, simlab.Options{DataDir: t.TempDir(), Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	defer lab.Close()
	ctl := lab.Controller()
	cl, err := client.New(ctl.HTTPURL(), client.WithToken(ctl.APIToken()))
	if err != nil {
		t.Fatal(err)
	}
	images, err := simlab.Pictures("")
	if err != nil {
		t.Fatal(err)
	}
	const n = 12
	s, err := swarm.Start(ctx, swarm.Options{Count: n, Prefix: "sw", Client: cl, Device: "Jetson AGX Orin",
		Models: []string{"Cosmos3-Edge"}, Speedup: 50, LogDir: t.TempDir(), Images: images, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Stop() }() // its error names the revoked agent, checked below
	ids := s.IDs()
	if len(ids) != n || ids[0] != "sw-0001" || ids[n-1] != fmt.Sprintf("sw-%04d", n) {
		t.Fatalf("ids %v", ids)
	}
	err = backoff.Default.Retry(ctx, func(int) error {
		agents, err := cl.Agents(ctx)
		if err != nil {
			return err
		}
		online := 0
		for _, a := range agents {
			if a.Online && strings.HasPrefix(a.ID, "sw-") {
				online++
			}
		}
		if online < n {
			return fmt.Errorf("%d of %d agents online", online, n)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	w := protocol.DefaultWorkload()
	w.Sizes, w.Cameras, w.RequestsPerLevel, w.MultiImageSizes, w.ImagesPerRequest = []string{"480p"}, []int{1}, 2, nil, nil
	sw, err := cl.SubmitSweep(ctx, protocol.Sweep{Name: "swarm", Agents: ids, Workload: w})
	if err != nil {
		t.Fatal(err)
	}
	if err := lab.Wait(ctx, sw); err != nil {
		t.Fatal(err)
	}
	v, err := cl.Sweep(ctx, sw.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got := v.Status.States[protocol.JobCompleted]; got != n {
		t.Errorf("%d of %d jobs completed: %v", got, n, v.Status.States)
	}
	runs, err := cl.Runs(ctx, client.RunFilter{Sweep: sw.ID})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		if !r.Simulated || r.Config.Device != "Jetson AGX Orin" || len(r.Combinations) != 1 {
			t.Errorf("run %s: simulated %v on %q with %d combinations, want a simulated Jetson AGX Orin run with 1",
				r.ID, r.Simulated, r.Config.Device, len(r.Combinations))
		}
	}
	if len(runs) != n {
		t.Errorf("%d runs, want %d", len(runs), n)
	}
	if ended := s.Ended(); len(ended) > 0 {
		t.Errorf("agents ended on their own: %v", ended)
	}
	// Each agent signed in with credentials of its own: revoking one
	// agent's ends that agent, and only it.
	if _, err := cl.RevokeAgentCredentials(ctx, ids[3]); err != nil {
		t.Fatal(err)
	}
	err = backoff.Default.Retry(ctx, func(int) error {
		if len(s.Ended()) == 0 {
			return fmt.Errorf("no agent ended")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if ended := s.Ended(); len(ended) != 1 || !strings.HasPrefix(ended[0], ids[3]+": ") {
		t.Errorf("revoking %s ended %v", ids[3], ended)
	}
}

func TestSwarmRefusesWhatItCannotRun(t *testing.T) {
	for _, tc := range []struct {
		opt  swarm.Options
		want string
	}{
		{swarm.Options{Count: 0, Speedup: 1, LogDir: "x", NATSURL: "nats://x"}, "count 0"},
		{swarm.Options{Count: 1, Speedup: 0.5, LogDir: "x", NATSURL: "nats://x"}, "speedup 0.5"},
		{swarm.Options{Count: 1, Speedup: 1, NATSURL: "nats://x"}, "log directory"},
		{swarm.Options{Count: 1, Speedup: 1, LogDir: "x"}, "NATS URL is required"},
		{swarm.Options{Count: 1, Speedup: 1, LogDir: "x", NATSURL: "nats://x", Device: "Toaster"}, `"Toaster"`},
	} {
		_, err := swarm.Start(context.Background(), tc.opt)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: got %v, want an error containing %q", tc.opt, err, tc.want)
		}
	}
}
