package realengine

import (
	"encoding/base64"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/agent/imageset"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// Unique pictures, seen by a real engine without a cache switch: Ollama
// decodes each (its own decoder takes the varied tables) and takes from its
// prompt cache no more of it than the text before the picture, as for a
// picture it never saw, while the same picture sent again is answered from
// the cache, picture included. Ollama reports the whole prompt's count in
// prompt_eval_count, hit or miss, and its timing moves with the machine's
// load: what its runner takes from the cache is read from its debug log
// ("loading cache slot ... used=N").
func TestRealOllamaMissesItsCacheOnEveryUniquePicture(t *testing.T) {
	ctx := testContext(t, 6*time.Minute)
	const maxTokens = 4
	eng, ep := startTinyOllama(t, ctx, maxTokens, map[string]string{"OLLAMA_DEBUG": "1"})
	imgs, err := imageset.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	root := strings.TrimSuffix(ep.BaseURL, "/v1")
	// send sends a picture and returns how many of the prompt's tokens
	// the runner took from its cache, and how many the prompt has.
	send := func(what, url string) (used, prompt int) {
		t.Helper()
		jpeg, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(url, "data:image/jpeg;base64,"))
		if err != nil {
			t.Fatal(err)
		}
		before := len(cacheSlotLine.FindAllString(eng.LogTail(5000), -1))
		if _, err := nativeChat(ctx, root, ep.Model, protocol.DefaultPrompt, jpeg, maxTokens); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		lines := cacheSlotLine.FindAllStringSubmatch(eng.LogTail(5000), -1)
		if len(lines) != before+1 {
			t.Fatalf("%s: %d cache slot lines in Ollama's log, then %d; want one more", what, before, len(lines))
		}
		last := lines[len(lines)-1]
		prompt, _ = strconv.Atoi(last[1])
		used, _ = strconv.Atoi(last[2])
		t.Logf("%s: %d of %d prompt tokens from the cache", what, used, prompt)
		return used, prompt
	}
	// Pictures i*Len of one phase are one picture of the set again and
	// again: only the tables tell them apart.
	var text int
	for i := range 4 {
		u, err := imgs.UniqueDataURL("480p", i*imgs.Len(), 7)
		if err != nil {
			t.Fatal(err)
		}
		used, prompt := send(fmt.Sprintf("unique picture %d", i), u)
		if i == 1 {
			text = used
		}
		if i > 0 && (used != text || used > prompt/2) {
			t.Fatalf("unique picture %d: %d of %d tokens from the cache (picture 1: %d): the cache answered the picture", i, used, prompt, text)
		}
	}
	again, err := imgs.UniqueDataURL("480p", 3*imgs.Len(), 7)
	if err != nil {
		t.Fatal(err)
	}
	if used, prompt := send("the last picture again", again); used <= text || used < prompt/2 {
		t.Fatalf("a repeated picture: %d of %d tokens from the cache, no more than a new picture's %d: the cache never answers a picture, so the test proves nothing", used, prompt, text)
	}
}

// cacheSlotLine is the line Ollama's runner logs at debug level as it
// takes a prompt's first tokens from its cache.
var cacheSlotLine = regexp.MustCompile(`msg="loading cache slot".* prompt=(\d+) used=(\d+)`)
