package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/vlmfleet/vlmfleet/controller"
	"github.com/vlmfleet/vlmfleet/protocol"
)

func TestReadSweepFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(good, []byte("name: orins\nagents: [a1]\nworkload:\n  sizes: [720p]\n  cameras: [1, 2, 4]\n  multi_image_sizes: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := readSweepFile(good)
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "orins" || len(s.Workload.Cameras) != 3 || s.Workload.MaxTokens != 128 || len(s.Workload.MultiImageSizes) != 0 {
		t.Errorf("sweep %+v", s)
	}
	for name, body := range map[string]string{
		"typo.yaml":   "name: x\nworkload:\n  camera: [1]\n",
		"bad.yaml":    "workload:\n  cameras: [0]\n",
		"syntax.json": "{\n  \"workload\": {\"cameras\": [1,]}\n}",
	} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := readSweepFile(p)
		want := map[string]string{"typo.yaml": "[3:3]", "bad.yaml": "workload.cameras[0]", "syntax.json": "line 2 column"}[name]
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: got %v, want an error naming the file and %q", name, err, want)
		}
	}
}

// TestSweepCommandWaits submits a sweep through the command, plays the
// agent's part over NATS and checks that --wait returns once the job ends.
func TestSweepCommandWaits(t *testing.T) {
	ctx, ctl, js := controllerWithAgent(t)

	type result struct {
		code           int
		stdout, stderr string
	}
	done := make(chan result, 1)
	go func() {
		var out, errb bytes.Buffer
		code := run([]string{"sweep", "--controller", ctl.HTTPURL(), "--agents", "a1", "--sizes", "720p", "--cameras", "1,2",
			"--multi-sizes", "none", "--requests", "2", "--wait"}, &out, &errb, func(string) string { return "" })
		done <- result{code, out.String(), errb.String()}
	}()

	// Take the job as the agent would, then report it finished.
	cons, err := js.CreateOrUpdateConsumer(ctx, protocol.StreamJobs, jetstream.ConsumerConfig{
		Durable: protocol.JobConsumerName("a1"), FilterSubject: protocol.JobSubject("a1"), AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
	msg, err := cons.Next(jetstream.FetchMaxWait(20 * time.Second))
	if err != nil {
		t.Fatalf("no job arrived: %v", err)
	}
	job, err := protocol.DecodeJob(msg.Data())
	if err != nil {
		t.Fatal(err)
	}
	_ = msg.Ack()
	if job.Workload.RequestsPerLevel != 2 || len(job.Workload.Cameras) != 2 || len(job.Workload.MultiImageSizes) != 0 {
		t.Errorf("workload from flags: %+v", job.Workload)
	}
	for _, st := range []protocol.JobState{protocol.JobAccepted, protocol.JobRunning, protocol.JobCompleted} {
		data, _ := json.Marshal(protocol.JobStateChange{Schema: 1, JobID: job.ID, SweepID: job.SweepID, AgentID: "a1", State: st, Attempt: 1, Time: time.Now()})
		if _, err := js.Publish(ctx, protocol.AgentSubject("a1", protocol.KindState), data, jetstream.WithMsgID(protocol.StateMsgID(job.ID, st, 1))); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case r := <-done:
		if r.code != 0 || !strings.Contains(r.stdout, "done: 1 jobs, 1 completed") {
			t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
		}
	case <-ctx.Done():
		t.Fatal("vlmfleet sweep --wait did not return after the job completed")
	}
}

func TestSweepCommandReportsBadFlags(t *testing.T) {
	var out, errb bytes.Buffer
	code := run([]string{"sweep", "--controller", "http://127.0.0.1:1", "--cameras", "1,x"}, &out, &errb, func(string) string { return "" })
	if code != 2 || !strings.Contains(errb.String(), `--cameras: "x" is not a whole number`) {
		t.Errorf("exit %d: %s", code, errb.String())
	}
	errb.Reset()
	code = run([]string{"sweep", "--controller", "http://127.0.0.1:1", "--sizes", "4K"}, &out, &errb, func(string) string { return "" })
	if code != 2 || !strings.Contains(errb.String(), "workload.sizes[0]") {
		t.Errorf("exit %d: %s", code, errb.String())
	}
}

// controllerWithAgent starts a real controller and announces agent a1, which
// offers deployment d1, the way an agent does over JetStream; the test plays
// the agent's part with the returned client.
func controllerWithAgent(t *testing.T) (context.Context, *controller.Controller, jetstream.JetStream) {
	t.Helper()
	ctl, err := controller.New(controller.Options{DataDir: t.TempDir(), NATSListen: "127.0.0.1:-1", HTTPAddr: "127.0.0.1:0", Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	if err := ctl.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ctl.Close() })
	nc, err := nats.Connect(ctl.NATSURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
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
	t.Cleanup(stop)
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
	return ctx, ctl, js
}
