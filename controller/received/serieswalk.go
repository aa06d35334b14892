package received

import (
	"bytes"
	"time"
	"unicode/utf8"
)

// seriesReadsAsSamples reports whether v is a telemetry series that surely
// decodes, with encoding/json/v2's defaults, into
// []protocol.TelemetrySample: well formed (its syntax, its strings valid
// UTF-8, no name twice in an object) and every field of the kind its
// sample field takes. It reads v once, making nothing: checking a series
// with the decoder (its syntax, then its samples, whose rails and fields
// are maps) was most of the cost of taking in a result message. It
// answers false for anything it is not sure of (an escape in a string, a
// field samples do not have, a null sample, rails not in the order
// encoders write map keys in), and its caller then decodes the series to
// know: so only a true answer must be right, which
// FuzzSeriesReadsAsSamples checks against the decoder.
func seriesReadsAsSamples(v []byte) bool {
	w := walker{b: v}
	w.space()
	return w.elements(w.sample) && w.space() == len(w.b)
}

// walker reads JSON, and takes only JSON that is well formed.
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
	if w.i < len(w.b) && w.b[w.i] > ' ' {
		return w.i // most often: JSON as encoders write it has none
	}
	return w.spaces()
}

func (w *walker) spaces() int {
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
	return w.container('[', ']', element)
}

// container reads what starts with open and ends with close, its items,
// apart by commas, read by item; or null, which has none.
func (w *walker) container(open, close byte, item func() bool) bool {
	if w.peek() == 'n' {
		return w.literal("null")
	}
	if !w.take(open) {
		return false
	}
	if w.space(); w.take(close) {
		return true
	}
	for {
		if !item() {
			return false
		}
		w.space()
		if w.take(close) {
			return true
		}
		if !w.take(',') {
			return false
		}
		w.space()
	}
}

// str reads a string without escapes or control characters, in valid
// UTF-8, and returns what is between its quotes. A string with an escape
// is not taken: it would have to be decoded to be compared.
func (w *walker) str() (s []byte, ok bool) {
	if !w.take('"') {
		return nil, false
	}
	ascii := true
	rest := w.b[w.i:] // read through a local slice: w.i written once
	for n, c := range rest {
		switch {
		case c == '"':
			w.i += n + 1
			return rest[:n], ascii || utf8.Valid(rest[:n])
		case c == '\\' || c < ' ':
			return nil, false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return nil, false
}

// number reads a number (or null, which a float64 takes as nothing) and
// says whether it is one as JSON writes them, which a float64 holds.
func (w *walker) number() bool {
	if w.peek() == 'n' {
		return w.literal("null")
	}
	start := w.i
	w.take('-')
	switch {
	case w.take('0'):
	case w.digits() == 0:
		return false
	}
	if w.take('.') && w.digits() == 0 {
		return false
	}
	if !w.take('e') && !w.take('E') {
		return w.i-start < 300 || fitsFloat64(w.b[start:w.i]) // short: surely (see fitsFloat64)
	}
	if !w.take('+') {
		w.take('-')
	}
	return w.digits() > 0 && fitsFloat64(w.b[start:w.i])
}

// digits reads decimal digits and says how many.
func (w *walker) digits() int {
	rest := w.b[w.i:]
	n := 0
	for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
		n++
	}
	w.i += n
	return n
}

func (w *walker) literal(lit string) bool {
	if len(w.b)-w.i < len(lit) || string(w.b[w.i:w.i+len(lit)]) != lit {
		return false
	}
	w.i += len(lit)
	return true
}

// members reads an object, handing each member's name to value, which
// reads the value; null is an object with no members. A name with an
// escape is not taken (see str).
func (w *walker) members(value func(name []byte) bool) bool {
	return w.container('{', '}', func() bool {
		name, ok := w.str()
		if !ok {
			return false
		}
		w.space()
		if !w.take(':') {
			return false
		}
		w.space()
		return value(name)
	})
}

// The fields of a protocol.TelemetrySample, as bits of a set of those met.
const (
	fieldTime = 1 << iota
	fieldGPUUtil
	fieldPowerW
	fieldTempC
	fieldMemUsedMB
	fieldMemTotalMB
	fieldCPUUtil
	fieldAgentCPU
	fieldAgentRSSMB
	fieldThrottle
	fieldRails
	fieldExtra
)

// sample reads one protocol.TelemetrySample, each of its fields once.
func (w *walker) sample() bool {
	if w.peek() != '{' {
		return false
	}
	seen := 0
	return w.members(func(name []byte) bool {
		var f int
		read := w.number
		switch string(name) {
		case "t":
			f, read = fieldTime, w.time
		case "gpu_util":
			f = fieldGPUUtil
		case "power_w":
			f = fieldPowerW
		case "temp_c":
			f = fieldTempC
		case "mem_used_mb":
			f = fieldMemUsedMB
		case "mem_total_mb":
			f = fieldMemTotalMB
		case "cpu_util":
			f = fieldCPUUtil
		case "agent_cpu":
			f = fieldAgentCPU
		case "agent_rss_mb":
			f = fieldAgentRSSMB
		case "throttle":
			f, read = fieldThrottle, w.strings
		case "rails":
			f, read = fieldRails, w.figures
		case "extra":
			f, read = fieldExtra, w.figures
		default:
			return false // a field samples do not have
		}
		if seen&f != 0 {
			return false // named twice
		}
		seen |= f
		return read()
	})
}

// figures reads a map of names to numbers whose names are in increasing
// order, as encoding/json writes a map's keys, so that none is there
// twice; in another order it is not taken.
func (w *walker) figures() bool {
	var last []byte
	first := true
	return w.members(func(name []byte) bool {
		if !first && bytes.Compare(last, name) >= 0 {
			return false
		}
		first, last = false, name
		return w.number()
	})
}

// strings reads an array of strings, or null.
func (w *walker) strings() bool {
	return w.elements(func() bool {
		_, ok := w.str()
		return ok
	})
}

// time reads a time as RFC 3339 writes it, which the decoder takes: what
// time.Time.UnmarshalText takes, with the checks encoding/json/v2 adds
// (an hour of two digits, a period before the fraction, a zone offset in
// range).
func (w *walker) time() bool {
	s, ok := w.str()
	if !ok || !rfc3339Shape(s) {
		return false
	}
	var t time.Time
	return t.UnmarshalText(s) == nil
}

// rfc3339Shape reports whether s is laid out as 2006-01-02T15:04:05,
// with a fraction after a period or not, then Z or an offset ±07:00 whose
// hours are under 24 and minutes under 60.
func rfc3339Shape(s []byte) bool {
	const layout = "dddd-dd-ddTdd:dd:dd"
	if len(s) < len(layout)+1 {
		return false
	}
	for i := range len(layout) {
		if c := s[i]; layout[i] == 'd' && (c < '0' || c > '9') || layout[i] != 'd' && c != layout[i] {
			return false
		}
	}
	rest := s[len(layout):]
	if rest[0] == '.' {
		n := 1
		for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
			n++
		}
		if n == 1 {
			return false
		}
		rest = rest[n:]
	}
	if len(rest) == 1 {
		return rest[0] == 'Z'
	}
	if len(rest) != 6 || (rest[0] != '+' && rest[0] != '-') || rest[3] != ':' {
		return false
	}
	for _, i := range []int{1, 2, 4, 5} {
		if rest[i] < '0' || rest[i] > '9' {
			return false
		}
	}
	return (rest[1]-'0')*10+rest[2]-'0' < 24 && (rest[4]-'0')*10+rest[5]-'0' < 60
}

// cutSeries finds a result message's telemetry series where an agent
// writes it, after the first "telemetry_series": in the message, and checks
// it as seriesReadsAsSamples does. It returns where the series starts and
// ends, or false for a message without one there or with a series the
// check does not take. It does not know that what it found is the
// combination's series: the decoder, reading the message with "[]" in its
// place, says so (decodeCut).
func cutSeries(msg []byte) (start, end int, ok bool) {
	const member = `"telemetry_series":`
	i := bytes.Index(msg, []byte(member))
	if i < 0 {
		return 0, 0, false
	}
	w := walker{b: msg, i: i + len(member)}
	start = w.space()
	if !w.elements(w.sample) {
		return 0, 0, false
	}
	return start, w.i, true
}
