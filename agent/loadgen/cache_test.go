package loadgen

import (
	"fmt"
	"testing"
)

// The prompt tokens a server served from its cache are recorded per
// request and summarised per combination, whether the server says so in
// llama.cpp's timings (cache_n) or in OpenAI's usage details.
func TestCachedPromptTokensAreRecorded(t *testing.T) {
	for name, final := range map[string]string{
		"llama.cpp timings": `{"choices":[],"usage":{"prompt_tokens":250,"completion_tokens":2},"timings":{"cache_n":249,"prompt_n":1,"prompt_ms":3.1}}`,
		"usage details":     `{"choices":[],"usage":{"prompt_tokens":250,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":249}}}`,
	} {
		t.Run(name, func(t *testing.T) {
			f := newFakeEngine(t, func(s *sse, n int, req fakeRequest) {
				s.raw("data: " + llamaRoleChunk + "\n\ndata: " + tokenChunk("a") + "\n\n")
				s.event(tokenChunk("b"))
				cached := final
				if n == 0 {
					// The first request finds nothing in the cache.
					cached = `{"choices":[],"usage":{"prompt_tokens":250,"completion_tokens":2},"timings":{"cache_n":0}}`
				}
				s.event(cached)
				s.event("[DONE]")
			})
			c := measureOne(t, f.target(), oneCombo("480p", 1, 3, 0), testImages{n: 2})
			if c.Completed != 3 {
				t.Fatalf("completed %d: %v", c.Completed, c.Errors)
			}
			var got []int
			for _, r := range c.Requests {
				got = append(got, r.CachedTokens)
			}
			if fmt.Sprint(got) != "[0 249 249]" {
				t.Errorf("cached tokens per request %v, want [0 249 249]", got)
			}
			if c.CachedPromptTokens != 2*249 || c.CachedRequests != 2 {
				t.Errorf("combination: %d cached prompt tokens in %d requests, want 498 in 2", c.CachedPromptTokens, c.CachedRequests)
			}
		})
	}
}
