package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/vlmfleet/vlmfleet/controller"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// vlmfleet sweep --cancel cancels a sweep's queued jobs, and says so when
// the job named has already ended.
func TestSweepCommandCancels(t *testing.T) {
	ctl, err := controller.New(controller.Options{DataDir: t.TempDir(), NATSListen: "127.0.0.1:-1", HTTPAddr: "127.0.0.1:0", Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := ctl.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer ctl.Close()
	nc, err := nats.Connect(ctl.NATSURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	announced := make(chan struct{}, 1)
	stop := ctl.OnEvent(func(e controller.Event) {
		if e.Kind == controller.EventAgent {
			select {
			case announced <- struct{}{}:
			default:
			}
		}
	})
	defer stop()
	hello, _ := json.Marshal(protocol.AgentHello{Schema: 1, AgentID: "a1", Hostname: "h", Simulated: true,
		Deployments: []protocol.Deployment{{ID: "d1", Engine: "sim", Model: "m"}}})
	if _, err := js.Publish(ctx, protocol.AgentSubject("a1", protocol.KindHello), hello); err != nil {
		t.Fatal(err)
	}
	select {
	case <-announced:
	case <-ctx.Done():
		t.Fatal("the agent was never stored")
	}
	sw, err := ctl.SubmitSweep(ctx, protocol.Sweep{Agents: []string{"a1"}, Workload: protocol.DefaultWorkload()})
	if err != nil {
		t.Fatal(err)
	}
	runCLI := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := run(append([]string{"sweep", "--controller", ctl.HTTPURL()}, args...), &out, &errb, func(string) string { return "" })
		return code, out.String(), errb.String()
	}
	if code, out, errs := runCLI("--cancel", sw.ID); code != 0 || !strings.Contains(out, "1 jobs cancelled, 0 asked to stop") {
		t.Fatalf("cancel sweep: exit %d\n%s%s", code, out, errs)
	}
	rec, err := ctl.Store().Job(sw.Jobs[0])
	if err != nil || rec.State != protocol.JobCancelled {
		t.Fatalf("job after cancel: %s, %v", rec.State, err)
	}
	// The job left the stream: the agent's consumer would never see it.
	stream, err := js.Stream(ctx, protocol.StreamJobs)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stream.GetMsg(ctx, rec.StreamSeq); err == nil {
		t.Fatalf("cancelled job still in the jobs stream at %d", rec.StreamSeq)
	}
	if code, out, errs := runCLI("--cancel", sw.Jobs[0]); code != 0 || !strings.Contains(out, "had already ended (cancelled)") {
		t.Fatalf("cancel ended job: exit %d\n%s%s", code, out, errs)
	}
	if code, _, errs := runCLI("--cancel", "sw-nope"); code != 1 || !strings.Contains(errs, `knows no sweep or job "sw-nope"`) {
		t.Fatalf("cancel unknown: exit %d: %s", code, errs)
	}
	if code, _, errs := runCLI("--cancel", sw.ID, "--wait"); code != 2 || !strings.Contains(errs, "--cancel takes only --controller") {
		t.Fatalf("cancel with --wait: exit %d: %s", code, errs)
	}
}
