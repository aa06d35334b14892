package simlab_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/vlmfleet/vlmfleet/agent"
	"github.com/vlmfleet/vlmfleet/agent/outbox"
	"github.com/vlmfleet/vlmfleet/harness/simlab"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// plantSpool makes dir as another local user (uid 65534) would, before
// the agent first runs: open to all, holding a hello of agent id dated
// 2099 from a forged host and device, spooled as the agent spools it.
func plantSpool(t *testing.T, dir, id string) {
	t.Helper()
	stage := t.TempDir()
	o, err := outbox.Open(outbox.Options{Dir: stage, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	started := time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC)
	hello, _ := json.Marshal(protocol.AgentHello{Schema: protocol.SchemaVersion, Level: protocol.AgentLevel, AgentID: id, Hostname: "forged-host",
		StartedAt: started, Simulated: true, Device: protocol.DeviceFacts{Name: "Forged GPU", Kind: protocol.DeviceSimulated}})
	if _, err := o.Append(context.Background(), protocol.AgentSubject(id, protocol.KindHello), protocol.HelloMsgID(id, started.UnixNano()), hello); err != nil {
		t.Fatal(err)
	}
	_ = o.Close()
	if err := os.MkdirAll(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	msgs, _ := filepath.Glob(filepath.Join(stage, "*.msg"))
	for _, m := range msgs {
		b, err := os.ReadFile(m)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(m)), b, 0o666); err != nil {
			t.Fatal(err)
		}
	}
	err = filepath.Walk(filepath.Dir(dir), func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if fi.IsDir() {
			if err := os.Chmod(p, 0o777); err != nil {
				return err
			}
		}
		return os.Lchown(p, 65534, 65534)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Another local user made the agent's default spool directory (under the
// temp dir, which all users share) before the agent first ran, and
// planted a hello in it from a forged host: the agent refuses to start,
// saying whose the directory is and what to do, and the controller never
// sees the forged hello.
func TestSpoolPlantedByAnotherUserIsNotSent(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make a directory as another user (uid 65534); CI runs as root")
	}
	ctx := testContext(t, 60*time.Second)
	l := newLab(t, ctx, simlab.Options{})
	tmp := t.TempDir()
	if err := os.Chmod(tmp, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", tmp)
	const id = "shared-host"
	top := filepath.Join(tmp, fmt.Sprintf("vlmfleet-spool-%d", os.Getuid()))
	plantSpool(t, filepath.Join(top, id), id)

	seed, err := l.Controller().EnrolAgent(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	deps, err := agent.SimulatedDeployments("Jetson AGX Orin", 50, "Cosmos3-Edge")
	if err != nil {
		t.Fatal(err)
	}
	// No log_dir and no spool_dir: the spool's default, under TMPDIR.
	a, err := agent.New(agent.Config{ID: id, NATSURL: l.Controller().NATSURL(), NATSSeed: seed, Deployments: deps,
		Simulate: "Jetson AGX Orin", SimSpeedup: 50}, agent.Options{})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- a.Run(runCtx) }()
	select {
	case err := <-done:
		for _, want := range []string{top + " belongs to uid 65534, not to this agent's uid", "set spool_dir (or log_dir)"} {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("the agent stopped with %v; want it to say %q", err, want)
			}
		}
	case <-time.After(10 * time.Second):
		stop()
		<-done
		t.Errorf("the agent ran on a spool another user made and planted a hello in")
	}
	agents, err := l.Controller().Agents(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range agents {
		if v.Hostname == "forged-host" || v.Device.Name == "Forged GPU" {
			t.Errorf("the controller shows the planted hello: agent %s on host %s, device %s", v.ID, v.Hostname, v.Device.Name)
		}
	}
}
