package realengine

import (
	"context"
	"encoding/base64"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/agent/engine"
	"github.com/vlmfleet/vlmfleet/agent/imageset"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// Unique pictures, seen by a real engine without a cache switch: Ollama
// decodes each (its own decoder takes the varied tables) and evaluates the
// whole prompt for every one, picture included, as for a picture it never
// saw, while the same picture sent again is answered from its prompt
// cache (it evaluates fewer tokens).
func TestRealOllamaMissesItsCacheOnEveryUniquePicture(t *testing.T) {
	bin := ollamaBinary(t)
	ctx := testContext(t, 6*time.Minute)
	models, _ := tinyModel(t)
	logDir := t.TempDir()
	eng, err := engine.New(engine.Config{Kind: engine.KindOllama, Command: []string{bin},
		Model: "tiny-llama.gguf", MMProj: "tiny-mmproj.gguf", StartupTimeout: engine.Duration(4 * time.Minute)},
		engine.Env{ModelRoots: []string{models}, LogDir: logDir, Log: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	const maxTokens = 4
	ep, err := eng.Start(ctx, engine.Needs{MaxCameras: 1, MaxImages: 1, MaxTokens: maxTokens, MaxWidth: 854, MaxHeight: 480})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := eng.Stop(context.Background()); err != nil {
			t.Errorf("stop: %v", err)
		}
		noOllamaLeft(t, filepath.Join(logDir, "ollama", "models"))
	})
	imgs, err := imageset.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	root := strings.TrimSuffix(ep.BaseURL, "/v1")
	send := func(what, url string) int {
		t.Helper()
		jpeg, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(url, "data:image/jpeg;base64,"))
		if err != nil {
			t.Fatal(err)
		}
		oc, err := nativeChat(ctx, root, ep.Model, protocol.DefaultPrompt, jpeg, maxTokens)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		t.Logf("%s: Ollama evaluated %d prompt tokens in %v", what, oc.promptTokens, oc.promptEval)
		return oc.promptTokens
	}
	// Pictures 0 and 1 of one phase are one picture of the set twice (a set
	// of one would do as well): only the tables tell them apart.
	var full int
	for i := range 4 {
		u, err := imgs.UniqueDataURL("480p", i*imgs.Len(), 7)
		if err != nil {
			t.Fatal(err)
		}
		n := send("unique picture", u)
		if i == 0 {
			full = n
		}
		if n != full || n < 50 {
			t.Fatalf("unique picture %d: %d prompt tokens evaluated, the first %d: a cache answered part of it", i, n, full)
		}
	}
	again, err := imgs.UniqueDataURL("480p", 3*imgs.Len(), 7)
	if err != nil {
		t.Fatal(err)
	}
	if n := send("the last picture again", again); n >= full {
		t.Fatalf("a repeated picture: %d prompt tokens evaluated, as many as a new one (%d): the cache never answers, so the test proves nothing", n, full)
	}
}
