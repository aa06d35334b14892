package loadgen

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// profileFake is a vision server as a profile sees it: it counts prompt
// tokens its own way (a fixed template and image cost, and per word one
// token and one more for each six letters), answers max_tokens tokens when
// told to by min_tokens or ignore_eos and stops at natural tokens
// otherwise, and serves at most capacity requests at once, the others
// waiting their turn.
type profileFake struct {
	*fakeEngine
	ttft, perToken time.Duration
	natural        int
	// refuseMinTokens answers 400 to a request with min_tokens.
	refuseMinTokens bool
	noUsage         bool
	slots           chan struct{}

	mu sync.Mutex
	// textTokens are the text tokens of each request with more than a
	// word, in arrival order; refused counts the 400s.
	textTokens []int
	refused    int
}

const (
	fakeTemplateTokens = 12
	fakeImageTokens    = 100
)

// newProfileFake starts the fake; opts set it up before it serves.
func newProfileFake(t *testing.T, capacity int, ttft, perToken time.Duration, opts ...func(*profileFake)) *profileFake {
	f := &profileFake{ttft: ttft, perToken: perToken, natural: 5, slots: make(chan struct{}, capacity)}
	for _, o := range opts {
		o(f)
	}
	f.fakeEngine = newFakeEngine(t, f.respond)
	return f
}

// fakeWordTokens is the fake's own tokenizer.
func fakeWordTokens(text string) int {
	n := 0
	for _, w := range strings.Fields(text) {
		n += 1 + len(w)/6
	}
	return n
}

func (f *profileFake) respond(s *sse, _ int, req fakeRequest) {
	if f.refuseMinTokens && req.MinTokens != nil {
		f.mu.Lock()
		f.refused++
		f.mu.Unlock()
		http.Error(s.w, `{"error":{"message":"unknown field min_tokens"}}`, http.StatusBadRequest)
		return
	}
	text, images := 0, len(req.images())
	for _, m := range req.Messages {
		for _, c := range m.Content {
			text += fakeWordTokens(c.Text)
		}
	}
	if text > 1 {
		f.mu.Lock()
		f.textTokens = append(f.textTokens, text)
		f.mu.Unlock()
	}
	prompt := fakeTemplateTokens + fakeImageTokens*images + text
	out := req.MaxTokens
	forced := (req.MinTokens != nil && *req.MinTokens >= out) || (req.IgnoreEOS != nil && *req.IgnoreEOS)
	if !forced {
		out = min(out, f.natural)
	}
	select {
	case f.slots <- struct{}{}:
	case <-s.r.Context().Done():
		return
	}
	defer func() { <-f.slots }()
	ttft := f.ttft
	if req.MaxTokens == 1 {
		ttft = 0 // a calibration probe: its time is not measured
	}
	if !req.Stream {
		s.sleep(ttft + time.Duration(out-1)*f.perToken)
		f.whole(s, prompt, out)
		return
	}
	s.event(vllmRoleChunk)
	s.sleep(ttft)
	for i := 0; i < out; i++ {
		if i > 0 {
			s.sleep(f.perToken)
		}
		s.event(tokenChunk("w "))
	}
	if !f.noUsage && req.StreamOptions.IncludeUsage {
		s.event(usageChunk(prompt, out))
	}
	s.event("[DONE]")
}

// whole answers in one piece.
func (f *profileFake) whole(s *sse, prompt, out int) {
	usage := ""
	if !f.noUsage {
		usage = fmt.Sprintf(`,"usage":{"prompt_tokens":%d,"completion_tokens":%d}`, prompt, out)
	}
	content, _ := json.Marshal(strings.Repeat("w ", out))
	s.w.Header().Set("Content-Type", "application/json")
	_, _ = fmt.Fprintf(s.w, `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":%s},"finish_reason":"length"}]%s}`,
		content, usage)
}

func (f *profileFake) texts() []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]int(nil), f.textTokens...)
}

// profileImages are pictures of any size: the URL says which.
type profileImages struct{}

func (profileImages) ProfilePicture(res protocol.Resolution, format string, i int, seed uint64) (string, string, error) {
	return fmt.Sprintf("data:image/%s;base64,%s-%d-%x", format, res, i, seed), "", nil
}

// vllmForced are vLLM's forced-length switches.
func vllmForced(n int) map[string]any {
	return map[string]any{"max_tokens": n, "min_tokens": n, "ignore_eos": true}
}

// profileSpec is a profile of one length and resolution at the levels.
func profileSpec(isl, osl, requests int, levels ...int) ProfileSpec {
	return ProfileSpec{
		Workload: protocol.ProfileWorkload{
			Lengths:     []protocol.LengthPair{{ISL: isl, OSL: osl}},
			Resolutions: []protocol.Resolution{{Width: 1120, Height: 1120}},
			ImageFormat: protocol.ImageFormatJPEG, ImagesPerRequest: 1,
			Concurrency: levels, RequestsPerLevel: requests,
		},
		Prompt: "Describe the picture.", RequestTimeout: 20 * time.Second,
	}
}
