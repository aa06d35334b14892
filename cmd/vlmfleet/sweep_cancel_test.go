package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/vlmfleet/vlmfleet/controller"
	"github.com/vlmfleet/vlmfleet/harness/labtest"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// vlmfleet sweep --cancel cancels a sweep's queued jobs, and says so when
// the job named has already ended.
func TestSweepCommandCancels(t *testing.T) {
	l := labtest.Start(t, controller.Options{})
	ctx, ctl := l.Ctx, l.Ctl
	sw, err := ctl.SubmitSweep(ctx, protocol.Sweep{Agents: []string{"a1"}, Workload: protocol.DefaultWorkload()})
	if err != nil {
		t.Fatal(err)
	}
	runCLI := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := run(append([]string{"sweep", "--controller", ctl.HTTPURL(), "--token-file", l.TokenFile}, args...), &out, &errb, func(string) string { return "" })
		return code, out.String(), errb.String()
	}
	// Without the token the controller refuses, and the error says how to give it.
	var out, errb bytes.Buffer
	if code := run([]string{"sweep", "--controller", ctl.HTTPURL(), "--cancel", sw.ID}, &out, &errb, func(string) string { return "" }); code != 1 ||
		!strings.Contains(errb.String(), "401 Unauthorized") || !strings.Contains(errb.String(), "pass --token-file <data-dir>/api-token or set VLMFLEET_TOKEN") {
		t.Fatalf("cancel without the token: exit %d: %s", code, errb.String())
	}
	if code, out, errs := runCLI("--cancel", sw.ID); code != 0 || !strings.Contains(out, "1 jobs cancelled, 0 asked to stop") {
		t.Fatalf("cancel sweep: exit %d\n%s%s", code, out, errs)
	}
	rec, err := ctl.Job(ctx, sw.Jobs[0])
	if err != nil || rec.State != protocol.JobCancelled {
		t.Fatalf("job after cancel: %s, %v", rec.State, err)
	}
	// The job left the stream: the agent's consumer would never see it.
	stream, err := l.AdminJS.Stream(ctx, protocol.StreamJobs)
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
