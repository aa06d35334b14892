package loadgen

import (
	"bytes"
	"fmt"
)

// maxSSELine bounds one SSE line so that a broken server cannot make the
// client buffer without limit.
const maxSSELine = 8 << 20

// sseScanner splits a server-sent event stream into events as its bytes
// arrive. Lines may end in \n or \r\n; an event may be split across reads or
// several may share one. Only data lines matter here: comments (": ping"),
// event, id and retry fields are skipped.
type sseScanner struct {
	buf     []byte // bytes read; buf[off:] is not consumed yet
	off     int
	data    []byte // the data lines of the event being assembled
	inEvent bool
}

func newSSEScanner(size int) *sseScanner {
	return &sseScanner{buf: make([]byte, 0, size), data: make([]byte, 0, 1024)}
}

func (s *sseScanner) reset() {
	s.buf = s.buf[:0]
	s.off = 0
	s.data = s.data[:0]
	s.inEvent = false
}

// space returns room to read into; pass the count read to wrote.
func (s *sseScanner) space() ([]byte, error) {
	if s.off == len(s.buf) {
		s.buf, s.off = s.buf[:0], 0
	}
	if cap(s.buf)-len(s.buf) < 2048 {
		if s.off > 0 {
			n := copy(s.buf, s.buf[s.off:])
			s.buf, s.off = s.buf[:n], 0
		}
		if cap(s.buf)-len(s.buf) < 2048 {
			if len(s.buf) > maxSSELine {
				return nil, fmt.Errorf("SSE line longer than %d bytes", maxSSELine)
			}
			nb := make([]byte, len(s.buf), 2*cap(s.buf)+4096)
			copy(nb, s.buf)
			s.buf = nb
		}
	}
	return s.buf[len(s.buf):cap(s.buf)], nil
}

func (s *sseScanner) wrote(n int) { s.buf = s.buf[:len(s.buf)+n] }

// next returns the data of the next complete event, valid until the next
// call, or false when more bytes are needed.
func (s *sseScanner) next() ([]byte, bool) {
	for {
		i := bytes.IndexByte(s.buf[s.off:], '\n')
		if i < 0 {
			return nil, false
		}
		line := s.buf[s.off : s.off+i]
		s.off += i + 1
		if d, ok := s.line(line); ok {
			return d, true
		}
	}
}

// end is called at the end of the stream: a last line without its newline
// and an event without its blank line still count, because some servers
// close right after "data: [DONE]".
func (s *sseScanner) end() ([]byte, bool) {
	if s.off < len(s.buf) {
		line := s.buf[s.off:]
		s.off = len(s.buf)
		if d, ok := s.line(line); ok {
			return d, true
		}
	}
	if s.inEvent {
		s.inEvent = false
		return s.data, true
	}
	return nil, false
}

func (s *sseScanner) line(line []byte) ([]byte, bool) {
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	if len(line) == 0 {
		if s.inEvent {
			s.inEvent = false
			return s.data, true
		}
		return nil, false
	}
	if line[0] == ':' {
		return nil, false
	}
	field, value := line, []byte(nil)
	if c := bytes.IndexByte(line, ':'); c >= 0 {
		field, value = line[:c], line[c+1:]
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
	}
	if string(field) != "data" {
		return nil, false
	}
	if s.inEvent {
		s.data = append(s.data, '\n')
	} else {
		s.data = s.data[:0]
		s.inEvent = true
	}
	s.data = append(s.data, value...)
	return nil, false
}
