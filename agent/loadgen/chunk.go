package loadgen

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// chunkInfo is what one streamed chat-completion chunk says that the
// measurement needs. Everything else in the chunk is skipped unread.
type chunkInfo struct {
	// choices is whether the chunk carried at least one choice: a role-only
	// chunk has choices but no token; a usage chunk may have none.
	choices bool
	// token is whether some choice's delta carries non-empty content,
	// reasoning_content, reasoning or tool_calls.
	token  bool
	finish string
	usage  bool
	// prompt and completion are usage's token counts; cached is its
	// prompt_tokens_details.cached_tokens, the prompt served from a cache.
	prompt, completion, cached int
	// timings is llama.cpp's timings object, raw.
	timings []byte
	// sim is the simulator's sim_timings object, raw (see simtimings.go).
	sim []byte
	// errMsg is a mid-stream error the server reported.
	errMsg string
}

var errBadJSON = errors.New("malformed JSON")

// parseChunk reads one chunk with a small hand-written scanner instead of
// encoding/json: it runs for every token of every camera, and a reflective
// decode of each chunk cost more CPU than the rest of the client (see
// docs/benchmarks.md). FuzzParseChunk holds it to encoding/json's reading.
func parseChunk(b []byte, ci *chunkInfo) error {
	*ci = chunkInfo{}
	s := jscan{b: b}
	s.ws()
	if s.peek() != '{' {
		return fmt.Errorf("chunk is not a JSON object: %w", errBadJSON)
	}
	err := s.object(func(key []byte) error {
		switch {
		case keyIs(key, "choices"):
			return s.choices(ci)
		case keyIs(key, "usage"):
			if s.peek() != '{' {
				ci.usage = false
				return s.skip()
			}
			ci.usage, ci.prompt, ci.completion, ci.cached = true, 0, 0, 0
			return s.object(func(k []byte) error {
				switch {
				case keyIs(k, "prompt_tokens"):
					return s.count(&ci.prompt)
				case keyIs(k, "completion_tokens"):
					return s.count(&ci.completion)
				case keyIs(k, "prompt_tokens_details"):
					ci.cached = 0
					if s.peek() != '{' {
						return s.skip()
					}
					return s.object(func(dk []byte) error {
						if keyIs(dk, "cached_tokens") {
							return s.count(&ci.cached)
						}
						return s.skip()
					})
				}
				return s.skip()
			})
		case keyIs(key, "timings"):
			start := s.i
			if err := s.skip(); err != nil {
				return err
			}
			ci.timings = nil
			if b[start] == '{' {
				ci.timings = b[start:s.i]
			}
			return nil
		case keyIs(key, SimTimingsKey):
			start := s.i
			if err := s.skip(); err != nil {
				return err
			}
			ci.sim = nil
			if b[start] == '{' {
				ci.sim = b[start:s.i]
			}
			return nil
		case keyIs(key, "error"):
			start := s.i
			if err := s.skip(); err != nil {
				return err
			}
			ci.errMsg = errorMessage(b[start:s.i])
			return nil
		}
		return s.skip()
	})
	if err != nil {
		return err
	}
	s.ws()
	if s.i != len(b) {
		return fmt.Errorf("trailing data after the chunk: %w", errBadJSON)
	}
	return nil
}

func (s *jscan) choices(ci *chunkInfo) error {
	if s.peek() != '[' {
		ci.choices, ci.token, ci.finish = false, false, ""
		return s.skip()
	}
	ci.choices, ci.token, ci.finish = false, false, ""
	return s.array(func() error {
		ci.choices = true
		if s.peek() != '{' {
			return s.skip()
		}
		var token bool
		var finish string
		err := s.object(func(k []byte) error {
			switch {
			case keyIs(k, "delta"):
				token = false
				if s.peek() != '{' {
					return s.skip()
				}
				var content, rc, r, tc bool
				err := s.object(func(dk []byte) error {
					switch {
					case keyIs(dk, "content"):
						return s.nonEmpty(&content)
					case keyIs(dk, "reasoning_content"):
						return s.nonEmpty(&rc)
					case keyIs(dk, "reasoning"):
						return s.nonEmpty(&r)
					case keyIs(dk, "tool_calls"):
						return s.nonEmpty(&tc)
					}
					return s.skip()
				})
				token = content || rc || r || tc
				return err
			case keyIs(k, "finish_reason"):
				start := s.i
				if err := s.skip(); err != nil {
					return err
				}
				finish = stringValue(s.b[start:s.i])
				return nil
			}
			return s.skip()
		})
		if token {
			ci.token = true
		}
		if finish != "" {
			ci.finish = finish
		}
		return err
	})
}

// keyIs compares a raw key with a name. Keys with escapes are decoded first;
// like encoding/json, matching ignores case.
func keyIs(raw []byte, name string) bool {
	if bytes.IndexByte(raw, '\\') >= 0 {
		var k string
		if json.Unmarshal(append(append([]byte{'"'}, raw...), '"'), &k) != nil {
			return false
		}
		return bytes.EqualFold([]byte(k), []byte(name))
	}
	if len(raw) != len(name) && !hasNonASCII(raw) {
		return false // only non-ASCII letters can fold to a different length
	}
	return bytes.EqualFold(raw, []byte(name))
}

func hasNonASCII(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 {
			return true
		}
	}
	return false
}

// stringValue is the text of a JSON string value, "" for anything else.
func stringValue(v []byte) string {
	if len(v) < 2 || v[0] != '"' {
		return ""
	}
	if bytes.IndexByte(v, '\\') < 0 {
		return string(v[1 : len(v)-1])
	}
	var s string
	if json.Unmarshal(v, &s) != nil {
		return ""
	}
	return s
}

// errorMessage turns an "error" value (an object with a message, or a
// string) into text; null is no error.
func errorMessage(v []byte) string {
	if bytes.Equal(v, []byte("null")) {
		return ""
	}
	if len(v) > 0 && v[0] == '"' {
		if s := stringValue(v); s != "" {
			return s
		}
	}
	var e struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(v, &e) == nil && e.Message != "" {
		return e.Message
	}
	return excerpt(v, 200)
}

// jscan walks JSON without building values.
type jscan struct {
	b []byte
	i int
}

func (s *jscan) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *jscan) peek() byte {
	s.ws()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// object calls fn for each key with the scanner at the value; fn consumes it.
func (s *jscan) object(fn func(key []byte) error) error {
	return s.members('{', '}', func() error {
		if s.peek() != '"' {
			return errBadJSON
		}
		start := s.i
		if err := s.str(); err != nil {
			return err
		}
		key := s.b[start+1 : s.i-1]
		if s.peek() != ':' {
			return errBadJSON
		}
		s.i++
		s.ws()
		return fn(key)
	})
}

// array calls fn for each element with the scanner at it; fn consumes it.
func (s *jscan) array(fn func() error) error {
	return s.members('[', ']', func() error {
		s.ws()
		return fn()
	})
}

// members walks an object or array from its open to its end byte, calling
// member for each comma-separated member; member consumes it.
func (s *jscan) members(open, end byte, member func() error) error {
	if s.peek() != open {
		return errBadJSON
	}
	s.i++
	if s.peek() == end {
		s.i++
		return nil
	}
	for {
		if err := member(); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.i++
		case end:
			s.i++
			return nil
		default:
			return errBadJSON
		}
	}
}

// str skips a string, escapes and all, checking it as encoding/json does.
// It runs over most of every chunk's bytes, so it keeps its index local.
func (s *jscan) str() error {
	b := s.b
	i := s.i + 1 // past the opening quote
	for i < len(b) {
		c := b[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			i++
			continue
		}
		switch c {
		case '"':
			s.i = i + 1
			return nil
		case '\\':
			if i+1 >= len(b) {
				return errBadJSON
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) {
					return errBadJSON
				}
				for _, h := range b[i+2 : i+6] {
					if !isHex(h) {
						return errBadJSON
					}
				}
				i += 6
			default:
				return errBadJSON
			}
		default: // a control character
			return errBadJSON
		}
	}
	return errBadJSON
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// skip consumes one value of any kind.
func (s *jscan) skip() error {
	switch c := s.peek(); {
	case c == '{':
		return s.object(func([]byte) error { return s.skip() })
	case c == '[':
		return s.array(s.skip)
	case c == '"':
		return s.str()
	case c == 't':
		return s.lit("true")
	case c == 'f':
		return s.lit("false")
	case c == 'n':
		return s.lit("null")
	case c == '-' || c >= '0' && c <= '9':
		_, err := s.number()
		return err
	}
	return errBadJSON
}

func (s *jscan) lit(w string) error {
	if len(s.b)-s.i < len(w) || string(s.b[s.i:s.i+len(w)]) != w {
		return errBadJSON
	}
	s.i += len(w)
	return nil
}

// number consumes a number in JSON's grammar and returns its text.
func (s *jscan) number() ([]byte, error) {
	start := s.i
	if s.i < len(s.b) && s.b[s.i] == '-' {
		s.i++
	}
	digits := func() int {
		n := 0
		for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
			s.i++
			n++
		}
		return n
	}
	if s.i < len(s.b) && s.b[s.i] == '0' {
		s.i++
	} else if digits() == 0 {
		return nil, errBadJSON
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if digits() == 0 {
			return nil, errBadJSON
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if digits() == 0 {
			return nil, errBadJSON
		}
	}
	return s.b[start:s.i], nil
}

// count reads a token count; anything but a number counts as 0.
func (s *jscan) count(dst *int) error {
	c := s.peek()
	if c != '-' && (c < '0' || c > '9') {
		*dst = 0
		return s.skip()
	}
	raw, err := s.number()
	if err != nil {
		return err
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || f < 0 || f > 1<<31 {
		*dst = 0
		return nil
	}
	*dst = int(f)
	return nil
}

// nonEmpty consumes a value and reports whether it carries anything: a
// non-empty string, array or object. null, "", [], {}, numbers and booleans
// carry nothing.
func (s *jscan) nonEmpty(dst *bool) error {
	start := s.i
	if err := s.skip(); err != nil {
		return err
	}
	v := s.b[start:s.i]
	switch v[0] {
	case '"':
		*dst = len(v) > 2
	case '[', '{':
		inner := bytes.TrimSpace(v[1 : len(v)-1])
		*dst = len(inner) > 0
	default:
		*dst = false
	}
	return nil
}

// excerpt shortens server text for an error message.
func excerpt(b []byte, n int) string {
	b = bytes.TrimSpace(b)
	if len(b) > n {
		return string(b[:n]) + "..."
	}
	return string(b)
}
