package protocol

import (
	"time"

	jsonv2 "github.com/go-json-experiment/json"
)

// seriesReadsAsSamples reports whether the telemetry series v, a JSON value
// already checked to be well formed (its syntax, its strings, no name twice
// in an object), surely decodes into []TelemetrySample. It reads v once,
// making nothing: decoding a series into samples, whose rails and fields
// are maps, was most of the cost of taking in a result message. It answers
// false for anything it is not sure of (a name with an escape, a null
// sample, a field of another kind than the sample's), and its caller then
// decodes the series to know: so only a true answer must be right, which
// FuzzSeriesReadsAsSamples checks against the decoder.
func seriesReadsAsSamples(v []byte) bool {
	w := walker{b: v}
	w.space()
	return w.elements(w.sample) && w.space() == len(w.b)
}

// walker reads well-formed JSON.
type walker struct {
	b []byte
	i int
}

func (w *walker) peek() byte {
	if w.i < len(w.b) {
		return w.b[w.i]
	}
	return 0
}

func (w *walker) take(c byte) bool {
	if w.peek() == c {
		w.i++
		return true
	}
	return false
}

// space reads white space and returns where it ended.
func (w *walker) space() int {
	for w.i < len(w.b) {
		switch w.b[w.i] {
		case ' ', '\t', '\r', '\n':
			w.i++
		default:
			return w.i
		}
	}
	return w.i
}

// elements reads an array, each element with element, or null.
func (w *walker) elements(element func() bool) bool {
	if w.peek() == 'n' {
		return w.literal("null")
	}
	if !w.take('[') {
		return false
	}
	if w.space(); w.take(']') {
		return true
	}
	for {
		if !element() {
			return false
		}
		w.space()
		if w.take(']') {
			return true
		}
		if !w.take(',') {
			return false
		}
		w.space()
	}
}

// str reads a string and returns what is between its quotes; escaped
// says whether that holds an escape, to be decoded before it is read.
func (w *walker) str() (s []byte, escaped, ok bool) {
	if !w.take('"') {
		return nil, false, false
	}
	start := w.i
	for w.i < len(w.b) {
		switch w.b[w.i] {
		case '\\':
			escaped = true
			w.i += 2
		case '"':
			s = w.b[start:w.i]
			w.i++
			return s, escaped, true
		default:
			w.i++
		}
	}
	return nil, false, false
}

// number reads a number (or null, which a float64 takes as nothing) and
// says whether a float64 holds it.
func (w *walker) number() bool {
	if w.peek() == 'n' {
		return w.literal("null")
	}
	start := w.i
	for w.i < len(w.b) {
		c := w.b[w.i]
		if (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' {
			w.i++
			continue
		}
		break
	}
	return w.i > start && (w.b[start] == '-' || (w.b[start] >= '0' && w.b[start] <= '9')) && fitsFloat64(w.b[start:w.i])
}

func (w *walker) literal(lit string) bool {
	if len(w.b)-w.i < len(lit) || string(w.b[w.i:w.i+len(lit)]) != lit {
		return false
	}
	w.i += len(lit)
	return true
}

// skip reads any value.
func (w *walker) skip() bool {
	switch c := w.peek(); {
	case c == '"':
		_, _, ok := w.str()
		return ok
	case c == '{' || c == '[':
		depth := 0
		for w.i < len(w.b) {
			switch w.b[w.i] {
			case '"':
				if _, _, ok := w.str(); !ok {
					return false
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					w.i++
					return true
				}
			}
			w.i++
		}
		return false
	case c == 't':
		return w.literal("true")
	case c == 'f':
		return w.literal("false")
	case c == 'n':
		return w.literal("null")
	default:
		return w.number()
	}
}

// members reads an object, handing each member's name to value, which
// reads the value; null is an object with no members.
func (w *walker) members(value func(name []byte) bool) bool {
	if w.peek() == 'n' {
		return w.literal("null")
	}
	if !w.take('{') {
		return false
	}
	if w.space(); w.take('}') {
		return true
	}
	for {
		name, escaped, ok := w.str()
		if !ok || escaped {
			return false
		}
		w.space()
		if !w.take(':') {
			return false
		}
		w.space()
		if !value(name) {
			return false
		}
		w.space()
		if w.take('}') {
			return true
		}
		if !w.take(',') {
			return false
		}
		w.space()
	}
}

// sample reads one TelemetrySample.
func (w *walker) sample() bool {
	if w.peek() != '{' {
		return false
	}
	return w.members(func(name []byte) bool {
		switch string(name) {
		case "t":
			start := w.i
			if _, _, ok := w.str(); !ok {
				return false
			}
			var t time.Time
			return jsonv2.Unmarshal(w.b[start:w.i], &t) == nil
		case "gpu_util", "power_w", "temp_c", "mem_used_mb", "mem_total_mb", "cpu_util", "agent_cpu", "agent_rss_mb":
			return w.number()
		case "throttle":
			return w.strings()
		case "rails", "extra":
			return w.members(func([]byte) bool { return w.number() })
		}
		return w.skip()
	})
}

// strings reads an array of strings, or null.
func (w *walker) strings() bool {
	return w.elements(func() bool {
		_, _, ok := w.str()
		return ok
	})
}
