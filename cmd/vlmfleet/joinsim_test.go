package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// agent -h shows how a simulated agent joins, with placeholders that are
// words (Go's flag package takes a usage's backquoted word for one).
func TestAgentHelpShowsASimulatedAgentThatJoins(t *testing.T) {
	code, out, errs := runCLI(t, "agent", "-h")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{
		"vlmfleet agent --simulate DEVICE --join STRING [--spool-dir DIR] [--labels k=v,...]",
		"-join JOIN_STRING\n", "-nats-credentials FILE\n", "-spool-dir DIR\n", "-labels k=v,...\n", "-simulate DEVICE\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("agent -h lacks %q:\n%s", want, out)
		}
	}
	for _, wrong := range []string{"-join vlmfleet", "-nats-credentials vlmfleet"} {
		if strings.Contains(out, wrong) {
			t.Errorf("agent -h shows %q", wrong)
		}
	}
}

// A simulated agent joins with its spool where --spool-dir puts it (the
// credentials beside it) and the labels --labels gives, and no warning
// about the temp dir: the directory was chosen.
func TestSimulatedAgentJoinsWithSpoolAndLabels(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	l := startJoinLab(t, ctx)
	js := l.createToken(t, ctx)
	spool := filepath.Join(l.root, "sim1", "spool")
	a := startProc(t, l.logs, "agent-sim1", nil, agentArgs("sim1", filepath.Join(l.root, "sim1-logs"),
		"--spool-dir", spool, "--labels", "site=rehearsal,rack=2", "--join", js.String())...)
	a.WaitLogged(ctx, "joined: later starts use these credentials")
	waitOnline(t, ctx, l.cl, "sim1", time.Time{})
	views, err := l.cl.Agents(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(views) != 1 || views[0].Labels["site"] != "rehearsal" || views[0].Labels["rack"] != "2" {
		t.Errorf("agents %+v, want sim1 with labels site=rehearsal, rack=2", views)
	}
	if _, err := os.Stat(filepath.Join(l.root, "sim1", "sim1.nk")); err != nil {
		t.Errorf("the credentials are not beside the spool: %v", err)
	}
	log, err := os.ReadFile(filepath.Join(l.logs, "agent-sim1.log"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(log), "temp dir") {
		t.Errorf("the agent warned about the temp dir although --spool-dir was set:\n%s", log)
	}
}

// --config with --simulate is refused with the config that does the same:
// deployments of engine kind sim on the device.
func TestAgentConfigWithSimulateSaysHowWithAConfig(t *testing.T) {
	code, _, errs := runCLI(t, "agent", "--config", "agent.yaml", "--simulate", "Jetson Orin NX")
	if want := "engine: {kind: sim, sim_device: Jetson Orin NX, "; code != 2 || !strings.Contains(errs, want) {
		t.Errorf("exit %d: %s\nwant exit 2 and %q", code, errs, want)
	}
}
