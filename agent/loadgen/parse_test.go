package loadgen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// refChunk reads a chunk with encoding/json: the meaning parseChunk must match.
func refChunk(b []byte) (chunkInfo, error) {
	var ci chunkInfo
	var top struct {
		Choices json.RawMessage `json:"choices"`
		Usage   json.RawMessage `json:"usage"`
		Timings json.RawMessage `json:"timings"`
		Error   json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(b, &top); err != nil {
		return ci, err
	}
	if !bytes.HasPrefix(bytes.TrimLeft(b, " \t\r\n"), []byte("{")) {
		return ci, fmt.Errorf("not an object")
	}
	if bytes.HasPrefix(top.Choices, []byte("[")) {
		var elems []json.RawMessage
		if err := json.Unmarshal(top.Choices, &elems); err != nil {
			return ci, err
		}
		for _, e := range elems {
			ci.choices = true
			if !bytes.HasPrefix(e, []byte("{")) {
				continue
			}
			var ch struct {
				Delta        json.RawMessage `json:"delta"`
				FinishReason json.RawMessage `json:"finish_reason"`
			}
			if err := json.Unmarshal(e, &ch); err != nil {
				return ci, err
			}
			if f := stringValue(ch.FinishReason); f != "" {
				ci.finish = f
			}
			if !bytes.HasPrefix(ch.Delta, []byte("{")) {
				continue
			}
			var d struct {
				Content          json.RawMessage `json:"content"`
				ReasoningContent json.RawMessage `json:"reasoning_content"`
				Reasoning        json.RawMessage `json:"reasoning"`
				ToolCalls        json.RawMessage `json:"tool_calls"`
			}
			if err := json.Unmarshal(ch.Delta, &d); err != nil {
				return ci, err
			}
			for _, v := range []json.RawMessage{d.Content, d.ReasoningContent, d.Reasoning, d.ToolCalls} {
				if refNonEmpty(v) {
					ci.token = true
				}
			}
		}
	}
	if bytes.HasPrefix(top.Usage, []byte("{")) {
		var u struct {
			Prompt     json.RawMessage `json:"prompt_tokens"`
			Completion json.RawMessage `json:"completion_tokens"`
			Details    json.RawMessage `json:"prompt_tokens_details"`
		}
		if err := json.Unmarshal(top.Usage, &u); err != nil {
			return ci, err
		}
		ci.usage, ci.prompt, ci.completion = true, refCount(u.Prompt), refCount(u.Completion)
		if bytes.HasPrefix(u.Details, []byte("{")) {
			var d struct {
				Cached json.RawMessage `json:"cached_tokens"`
			}
			if err := json.Unmarshal(u.Details, &d); err != nil {
				return ci, err
			}
			ci.cached = refCount(d.Cached)
		}
	}
	if bytes.HasPrefix(top.Timings, []byte("{")) {
		ci.timings = top.Timings
	}
	if len(top.Error) > 0 {
		ci.errMsg = errorMessage(top.Error)
	}
	return ci, nil
}

func refNonEmpty(v json.RawMessage) bool {
	var x any
	if len(v) == 0 || json.Unmarshal(v, &x) != nil {
		return false
	}
	switch x := x.(type) {
	case string:
		return x != "" || len(v) > 2
	case []any:
		return len(x) > 0
	case map[string]any:
		return len(bytes.TrimSpace(v[1:len(v)-1])) > 0
	}
	return false
}

func refCount(v json.RawMessage) int {
	f, err := strconv.ParseFloat(string(v), 64)
	if err != nil || f < 0 || f > 1<<31 {
		return 0
	}
	return int(f)
}

var chunkSeeds = []string{
	vllmRoleChunk, llamaRoleChunk, emptyDelta, finishChunk, tokenChunk("hi"), tokenChunk(""), tokenChunk("\"quoted\" \u00e9"),
	usageChunk(12, 3), `{"choices":[],"usage":null}`,
	`{"choices":[{"delta":{"reasoning_content":"think"}}]}`,
	`{"choices":[{"delta":{"reasoning":"think","content":null}}]}`,
	`{"choices":[{"delta":{"tool_calls":[{"index":0}]}}]}`,
	`{"choices":[{"delta":{"tool_calls":[]}}]}`,
	`{"choices":[{"delta":{"content":"a"},"finish_reason":"stop"},{"delta":{}}]}`,
	`{"choices":[{"finish_reason":"length","index":0,"delta":{}}],"timings":{"prompt_n":812,"prompt_ms":35.5}}`,
	`{"error":{"message":"boom","code":500}}`, `{"error":"flat"}`, `{"error":null}`,
	` { "choices" : [ { "delta" : { "content" : "x" } } ] } `,
	`{"Choices":[{"Delta":{"Content":"x"}}]}`, `{"choices":[{"delta":{"cont\u0065nt":"x"}}]}`,
	`{"choices":[{"delta":{"content":"x"},"delta":{}}]}`,
	`{"usage":{"completion_tokens":1e2,"prompt_tokens":-1}}`,
	`{"choices":[],"usage":{"prompt_tokens":250,"completion_tokens":8,"prompt_tokens_details":{"cached_tokens":249}}}`,
	`{"usage":{"prompt_tokens_details":null,"prompt_tokens":3}}`, `{"usage":{"prompt_tokens_details":{"cached_tokens":"x"}}}`,
	`[]`, `{}`, `{"choices":`, `{"choices":[{"delta":{"content":"\x"}}]}`, `nul`, ``,
}

func TestParseChunkCases(t *testing.T) {
	cases := []struct {
		in                         string
		choices, token, usage      bool
		finish, errMsg             string
		prompt, completion, timing int
		cached                     int
	}{
		{in: `{"choices":[],"usage":{"prompt_tokens":250,"completion_tokens":8,"prompt_tokens_details":{"cached_tokens":249}}}`,
			usage: true, prompt: 250, completion: 8, cached: 249},
		{in: vllmRoleChunk, choices: true},
		{in: llamaRoleChunk, choices: true},
		{in: emptyDelta, choices: true},
		{in: tokenChunk("hi"), choices: true, token: true},
		{in: finishChunk, choices: true, finish: "stop"},
		{in: usageChunk(12, 3), usage: true, prompt: 12, completion: 3},
		{in: `{"choices":[{"delta":{"tool_calls":[]}}]}`, choices: true},
		{in: `{"choices":[{"delta":{"tool_calls":[{"index":0}]}}]}`, choices: true, token: true},
		{in: `{"choices":[{"delta":{"reasoning":"r"}}]}`, choices: true, token: true},
		{in: `{"error":{"message":"boom"}}`, errMsg: "boom"},
		{in: `{"choices":[],"timings":{"prompt_n":3}}`, timing: 1},
	}
	for _, c := range cases {
		var ci chunkInfo
		if err := parseChunk([]byte(c.in), &ci); err != nil {
			t.Errorf("%s: %v", c.in, err)
			continue
		}
		if ci.choices != c.choices || ci.token != c.token || ci.usage != c.usage || ci.finish != c.finish ||
			ci.errMsg != c.errMsg || ci.prompt != c.prompt || ci.completion != c.completion || (ci.timings != nil) != (c.timing == 1) ||
			ci.cached != c.cached {
			t.Errorf("%s: got %+v", c.in, ci)
		}
	}
	for _, bad := range []string{`[]`, `{"choices":`, `nul`, ``, `{"a":1}x`, `{"a":"\q"}`} {
		var ci chunkInfo
		if err := parseChunk([]byte(bad), &ci); err == nil {
			t.Errorf("%q: want an error", bad)
		}
	}
}

// FuzzParseChunk holds the fast chunk scanner to encoding/json's reading of
// every valid chunk, and to no panic on anything else.
func FuzzParseChunk(f *testing.F) {
	for _, s := range chunkSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var got chunkInfo
		err := parseChunk(b, &got)
		if !json.Valid(b) {
			return
		}
		want, werr := refChunk(b)
		if (err == nil) != (werr == nil) {
			t.Fatalf("%q: parseChunk error %v, encoding/json error %v", b, err, werr)
		}
		if err != nil {
			return
		}
		g, w := fmt.Sprintf("%+v", got), fmt.Sprintf("%+v", want)
		if got.timings != nil || want.timings != nil {
			g, w = fmt.Sprintf("%+v %s", got, got.timings), fmt.Sprintf("%+v %s", want, want.timings)
		}
		if g != w {
			t.Fatalf("%q:\n got  %s\n want %s", b, g, w)
		}
	})
}

// sseEvents feeds a stream to the scanner in the given read sizes.
func sseEvents(stream []byte, cuts []int) ([]string, error) {
	s := newSSEScanner(16)
	var out []string
	for len(stream) > 0 {
		n := len(stream)
		if len(cuts) > 0 {
			n = min(cuts[0]%7+1, n)
			cuts = cuts[1:]
		}
		for n > 0 {
			p, err := s.space()
			if err != nil {
				return nil, err
			}
			k := copy(p, stream[:n])
			s.wrote(k)
			stream, n = stream[k:], n-k
			for {
				d, ok := s.next()
				if !ok {
					break
				}
				out = append(out, string(d))
			}
		}
	}
	for {
		d, ok := s.end()
		if !ok {
			break
		}
		out = append(out, string(d))
	}
	return out, nil
}

func TestSSEScanner(t *testing.T) {
	stream := ": hello\r\n\r\nevent: chunk\ndata: {\"a\":1}\n\ndata:two\r\ndata: lines\r\n\r\nid: 3\nretry: 10\n\n\n" +
		"data: [DONE]"
	want := []string{`{"a":1}`, "two\nlines", "[DONE]"}
	whole, err := sseEvents([]byte(stream), nil)
	if err != nil || fmt.Sprint(whole) != fmt.Sprint(want) {
		t.Fatalf("whole: %q %v, want %q", whole, err, want)
	}
	for step := 1; step < 9; step++ {
		cuts := make([]int, len(stream))
		for i := range cuts {
			cuts[i] = step - 1
		}
		got, err := sseEvents([]byte(stream), cuts)
		if err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("reads of %d bytes: %q %v", step, got, err)
		}
	}
}

// FuzzSSEScanner checks that how a stream is cut into reads never changes
// the events, and that no input makes the scanner panic.
func FuzzSSEScanner(f *testing.F) {
	f.Add([]byte("data: {\"a\":1}\n\ndata: [DONE]\n\n"), []byte{1, 2, 3})
	f.Add([]byte(": ping\r\n\r\ndata:x\r\ndata:y\r\n\r\n"), []byte{0})
	f.Add([]byte("data: a\n\ndata: b\n\ndata: c"), []byte{6, 5, 4, 3, 2, 1})
	f.Add([]byte("\r\r\n\n:data\nevent:x\ndata\n\n"), []byte{2})
	f.Fuzz(func(t *testing.T, stream, cutBytes []byte) {
		whole, err := sseEvents(stream, nil)
		if err != nil {
			t.Fatal(err)
		}
		cuts := make([]int, len(cutBytes))
		for i, c := range cutBytes {
			cuts[i] = int(c)
		}
		got, err := sseEvents(stream, cuts)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(got, "\x00") != strings.Join(whole, "\x00") || len(got) != len(whole) {
			t.Fatalf("%q cut %v: %q, whole %q", stream, cuts, got, whole)
		}
	})
}

// BenchmarkParseChunk is the per-token cost of reading one vLLM chunk.
func BenchmarkParseChunk(b *testing.B) {
	chunk := []byte(`{"id":"chatcmpl-8f2a","object":"chat.completion.chunk","created":1732890000,"model":"Qwen/Qwen2.5-VL-7B-Instruct","choices":[{"index":0,"delta":{"content":" street"},"logprobs":null,"finish_reason":null}]}`)
	b.Run("scanner", func(b *testing.B) {
		var ci chunkInfo
		for b.Loop() {
			if err := parseChunk(chunk, &ci); err != nil || !ci.token {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		for b.Loop() {
			if ci, err := refChunk(chunk); err != nil || !ci.token {
				b.Fatal(err)
			}
		}
	})
}
