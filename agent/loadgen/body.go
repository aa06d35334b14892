package loadgen

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// bodyParts is a chat-completions request cut around its images, built once
// per combination so that a request is only these strings and the images'
// data URLs, written out without being joined.
type bodyParts struct {
	prefix string // up to the first image's URL
	sep    string // between two image URLs
	suffix string // after the last image URL
}

// buildBodyParts lays out the request of the method: the prompt, then the
// images as data URLs, streamed with usage, at most w.MaxTokens tokens.
// ExtraBody keys are added at the top level and win over the defaults,
// except model, stream and messages, which the measurement owns.
func buildBodyParts(t Target, w protocol.Workload) (bodyParts, error) {
	maxTokens := w.MaxTokens
	if maxTokens <= 0 {
		maxTokens = 128
	}
	top := map[string]any{
		"stream_options": map[string]any{"include_usage": true},
		"max_tokens":     maxTokens,
	}
	for k, v := range t.ExtraBody {
		switch k {
		case "model", "stream", "messages":
			continue
		}
		top[k] = v
	}
	top["model"] = t.Model
	top["stream"] = true
	var b strings.Builder
	if err := writeTopFields(&b, top); err != nil {
		return bodyParts{}, err
	}
	prompt := w.Prompt
	if prompt == "" {
		prompt = protocol.DefaultPrompt
	}
	pj, err := json.Marshal(prompt)
	if err != nil {
		return bodyParts{}, fmt.Errorf("prompt: %w", err)
	}
	b.WriteString(`"messages":[{"role":"user","content":[{"type":"text","text":`)
	b.Write(pj)
	b.WriteString(`},{"type":"image_url","image_url":{"url":"`)
	return bodyParts{
		prefix: b.String(),
		sep:    `"}},{"type":"image_url","image_url":{"url":"`,
		suffix: `"}}]}]}`,
	}, nil
}

// writeTopFields opens a request body with its top-level fields in the
// order of their names, each followed by a comma: the messages come last.
func writeTopFields(b *strings.Builder, top map[string]any) error {
	keys := make([]string, 0, len(top))
	for k := range top {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	b.WriteByte('{')
	for _, k := range keys {
		kj, _ := json.Marshal(k)
		vj, err := json.Marshal(top[k])
		if err != nil {
			return fmt.Errorf("request body field %q: %w", k, err)
		}
		b.Write(kj)
		b.WriteByte(':')
		b.Write(vj)
		b.WriteByte(',')
	}
	return nil
}

// jsonSafe returns s ready to sit between JSON quotes. Base64 data URLs need
// no escaping, so this is a scan that almost always returns s itself.
func jsonSafe(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' {
			q, _ := json.Marshal(s)
			return string(q[1 : len(q)-1])
		}
	}
	return s
}

func bodyLen(segs []string) int64 {
	var n int64
	for _, s := range segs {
		n += int64(len(s))
	}
	return n
}
