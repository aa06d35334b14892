package measure

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/vlmfleet/vlmfleet/agent/engine"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// fakeLlamaServer builds the engine package's fake llama-server (it parses
// the real command line and serves the real endpoints) into a temporary
// directory, with a model root holding the files its configuration names.
func fakeLlamaServer(t *testing.T, fakeEnv map[string]string) (engine.Config, engine.Env) {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "llama-server")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/vlmfleet/vlmfleet/agent/engine/internal/fakeengine")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build the fake llama-server: %v\n%s", err, out)
	}
	root := t.TempDir()
	for _, f := range []string{"tiny.gguf", "mmproj-tiny.gguf"} {
		if err := os.WriteFile(filepath.Join(root, f), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg := engine.Config{Kind: engine.KindLlamaCpp, Command: []string{bin}, Model: "tiny.gguf", MMProj: "mmproj-tiny.gguf", Env: fakeEnv}
	return cfg, engine.Env{ModelRoots: []string{root}, LogDir: t.TempDir(), Log: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)}
}

func runFake(t *testing.T, fakeEnv map[string]string) protocol.Run {
	t.Helper()
	cfg, env := fakeLlamaServer(t, fakeEnv)
	eng, err := engine.New(cfg, env)
	if err != nil {
		t.Fatal(err)
	}
	run, _ := Run(context.Background(), Spec{
		Run:    protocol.Run{ID: "r1", Source: protocol.SourceLab, Config: protocol.Configuration{Model: "tiny"}, Workload: tinyWorkload()},
		Engine: eng,
		Images: pictures(t),
		Device: protocol.DeviceFacts{Name: "Build Host", Kind: "host"},
		Log:    env.Log,
	}, Hooks{})
	return run
}

// A run's engine.log_tail is the end of the engine's log when the run
// ended, the engine's last words on stopping included, whether the run
// completed or failed: the headers sent while it ran carry only the
// start-up lines.
func TestLogTailIsTheEndOfTheRun(t *testing.T) {
	t.Parallel()
	t.Run("completed", func(t *testing.T) {
		t.Parallel()
		run := runFake(t, nil)
		if run.Status != protocol.RunCompleted {
			t.Fatalf("run %s: %s", run.Status, run.Error)
		}
		// The fake, like llama-server, says so when SIGTERM stops it.
		if !strings.Contains(run.Engine.LogTail, "shutting down") {
			t.Errorf("log tail of a completed run does not end with the engine's stop:\n%s", run.Engine.LogTail)
		}
	})
	t.Run("failed", func(t *testing.T) {
		t.Parallel()
		run := runFake(t, map[string]string{"FAKE_CRASH_AFTER": "3"})
		if run.Status != protocol.RunFailed {
			t.Fatalf("run %s, want failed: the engine dies at its third request", run.Status)
		}
		if !strings.Contains(run.Engine.LogTail, "out of memory") {
			t.Errorf("log tail of a failed run lacks the engine's last words:\n%s", run.Engine.LogTail)
		}
	})
}
