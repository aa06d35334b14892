package simengine

import (
	"bytes"
	"testing"
)

// TestTokenTemplate checks that the pre-rendered token chunk is byte for
// byte the one the JSON encoder writes.
func TestTokenTemplate(t *testing.T) {
	for _, llama := range []bool{false, true} {
		c := newChunker("chatcmpl-x", 1700000000, `m"odel`, llama, answerWords())
		for i := range 3 {
			var got, want bytes.Buffer
			c.token(&got, i, false)
			c.write(&want, map[string]any{"choices": c.choice(map[string]any{"content": answerToken(c.words, i)}, nil)})
			if got.String() != want.String() {
				t.Errorf("llama %v token %d:\n got %s\nwant %s", llama, i, got.String(), want.String())
			}
		}
	}
}
