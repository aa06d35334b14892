package realengine

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/vlmfleet/vlmfleet/agent/engine"
	"github.com/vlmfleet/vlmfleet/internal/testutil/tinyvlm"
)

// ollamaBinary is the real Ollama that scripts/build-ollama built. Where
// the suite must run against it (CI, or VLMFLEET_REQUIRE_REAL_ENGINE), its
// absence fails the test; on a developer's machine without the build the
// test skips and says how to run it.
func ollamaBinary(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("VLMFLEET_OLLAMA")
	if bin == "" {
		const how = "VLMFLEET_OLLAMA is not set; build Ollama with scripts/build-ollama and set VLMFLEET_OLLAMA to the path it prints last"
		if os.Getenv("CI") != "" || os.Getenv("VLMFLEET_REQUIRE_REAL_ENGINE") != "" {
			t.Fatal(how + " (required here: CI or VLMFLEET_REQUIRE_REAL_ENGINE is set)")
		}
		t.Skip(how)
	}
	fi, err := os.Stat(bin)
	if err != nil || !fi.Mode().IsRegular() || fi.Mode()&0o111 == 0 {
		t.Fatalf("VLMFLEET_OLLAMA=%s is not an executable file (%v)", bin, err)
	}
	return bin
}

// testContext bounds a test's waits; it ends with the test.
func testContext(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func testLog(t *testing.T) zerolog.Logger {
	return zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.InfoLevel)
}

// tinyModel writes the tiny vision model into a fresh model root.
func tinyModel(t *testing.T) (root string, files tinyvlm.Files) {
	t.Helper()
	root = filepath.Join(t.TempDir(), "models")
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	files, err := tinyvlm.Write(root, 1)
	if err != nil {
		t.Fatal(err)
	}
	return root, files
}

// processesWithEnv lists the live processes whose environment holds kv
// exactly: the Ollama server and runners started with one model store.
func processesWithEnv(t *testing.T, kv string) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil {
			continue // gone, or not ours to read
		}
		stat, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if i := bytes.LastIndexByte(stat, ')'); i > 0 && len(stat) > i+2 && stat[i+2] == 'Z' {
			continue // a zombie holds no resources; its parent is gone or reaping it
		}
		for _, v := range bytes.Split(env, []byte{0}) {
			if string(v) == kv {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids
}

// noOllamaLeft fails the test if a process of the store in models still
// runs: stopping the engine must end the server and its runners.
func noOllamaLeft(t *testing.T, models string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		pids := processesWithEnv(t, "OLLAMA_MODELS="+models)
		if len(pids) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("Ollama processes left after the engine stopped: %v", pids)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// startTinyOllama starts the real Ollama serving the tiny model for one
// camera and one 480p picture, with env added to its environment, and
// stops it (checking that no Ollama process is left) when the test ends.
func startTinyOllama(t *testing.T, ctx context.Context, maxTokens int, env map[string]string) (engine.Engine, engine.Endpoint) {
	t.Helper()
	return startTinyOllamaFor(t, ctx, engine.Needs{MaxCameras: 1, MaxImages: 1, MaxTokens: maxTokens, MaxWidth: 854, MaxHeight: 480}, env)
}

// startTinyOllamaFor is startTinyOllama for the needs of a workload.
func startTinyOllamaFor(t *testing.T, ctx context.Context, needs engine.Needs, env map[string]string) (engine.Engine, engine.Endpoint) {
	t.Helper()
	bin := ollamaBinary(t)
	models, _ := tinyModel(t)
	logDir := t.TempDir()
	eng, err := engine.New(engine.Config{Kind: engine.KindOllama, Command: []string{bin},
		Model: "tiny-llama.gguf", MMProj: "tiny-mmproj.gguf", StartupTimeout: engine.Duration(4 * time.Minute), Env: env},
		engine.Env{ModelRoots: []string{models}, LogDir: logDir, Log: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	ep, err := eng.Start(ctx, needs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := eng.Stop(context.Background()); err != nil {
			t.Errorf("stop: %v", err)
		}
		noOllamaLeft(t, filepath.Join(logDir, "ollama", "models"))
	})
	return eng, ep
}
