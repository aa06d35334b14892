package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// Event is one Server-Sent Event of /api/events.
type Event struct {
	// Kind is the event's type (api.EventProgress, ...); "message"
	// when the server named none, as the SSE specification has it.
	Kind string
	// ID is the last event id the stream set, if any.
	ID string
	// Data is the event's data lines joined by "\n": one JSON document for
	// the controller's events.
	Data []byte
}

// Decode unmarshals the event's data into v.
func (e Event) Decode(v any) error {
	if err := json.Unmarshal(e.Data, v); err != nil {
		return fmt.Errorf("%s event: %w", e.Kind, err)
	}
	return nil
}

// maxEventBytes bounds one line and one event's data: the controller's
// events are single messages of at most protocol.MaxMessageBytes.
const maxEventBytes = 2 * protocol.MaxMessageBytes

// EventStream is an open /api/events stream. It is not safe for
// concurrent use.
type EventStream struct {
	body io.ReadCloser
	r    *sseReader
}

// Events opens the live event stream, narrowed to kinds (every kind when
// none are given). It returns once the controller has subscribed the
// stream, so every event after the call is delivered (a client that reads
// too slowly loses some; the controller never waits for it).
//
// The stream is not reconnected: when Next fails, events are lost until the
// caller opens a new stream, and it must resynchronise from the API (a
// sweep's or job's state, /api/live). ctx ends the stream.
func (c *Client) Events(ctx context.Context, kinds ...string) (*EventStream, error) {
	path := "/api/events"
	if len(kinds) > 0 {
		path += "?kind=" + url.QueryEscape(strings.Join(kinds, ","))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+path, nil)
	if err != nil {
		return nil, fmt.Errorf("events: %w", err)
	}
	req.Header.Set("Accept", "text/event-stream")
	c.authorize(req)
	// The controller writes the headers only once its subscription is in
	// place, so the answer arriving means no event is missed from here on.
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("events: %w", untrustedHint(err))
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		data, _ := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
		return nil, fmt.Errorf("events: %w", decodeError(resp.StatusCode, data))
	}
	return &EventStream{body: resp.Body, r: newSSEReader(resp.Body, maxEventBytes)}, nil
}

// Next waits for the next event. It returns io.EOF when the controller
// ended the stream, and the context's error once it is cancelled.
func (s *EventStream) Next() (Event, error) {
	return s.r.next()
}

// Close ends the stream.
func (s *EventStream) Close() error { return s.body.Close() }

var errEventTooLong = fmt.Errorf("event stream: an event over %d bytes", maxEventBytes)

// sseReader parses a text/event-stream as the HTML specification's
// "Interpreting an event stream" says: lines end in CRLF, LF or CR; a blank
// line dispatches the event; lines starting with ':' are comments; a field
// without a colon has an empty value; one space after the colon is
// dropped; data lines accumulate joined by LF; id persists across events
// (unless it holds NUL); retry is ignored, as this reader never reconnects;
// unknown fields are ignored; an event not ended by a blank line at the end
// of the stream is discarded.
type sseReader struct {
	r       *bufio.Reader
	max     int
	lastID  string
	started bool
	// skipLF drops the LF of a CRLF whose CR ended the previous line,
	// without waiting for the next byte to know whether it is one.
	skipLF bool
}

func newSSEReader(r io.Reader, max int) *sseReader {
	return &sseReader{r: bufio.NewReader(r), max: max}
}

func (s *sseReader) readLine() ([]byte, error) {
	var line []byte
	for {
		b, err := s.r.ReadByte()
		if err != nil {
			return nil, err
		}
		if s.skipLF {
			s.skipLF = false
			if b == '\n' {
				continue
			}
		}
		switch b {
		case '\n':
			return line, nil
		case '\r':
			s.skipLF = true
			return line, nil
		}
		if len(line) >= s.max {
			return nil, errEventTooLong
		}
		line = append(line, b)
	}
}

func (s *sseReader) next() (Event, error) {
	var data []byte
	kind, hasData := "", false
	for {
		line, err := s.readLine()
		if err != nil {
			return Event{}, err
		}
		if !s.started {
			s.started = true
			line = bytes.TrimPrefix(line, []byte("\ufeff"))
		}
		if len(line) == 0 {
			if !hasData {
				kind = ""
				continue
			}
			if kind == "" {
				kind = "message"
			}
			return Event{Kind: kind, ID: s.lastID, Data: data[:len(data)-1]}, nil
		}
		if line[0] == ':' {
			continue
		}
		field, value := line, []byte(nil)
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			field, value = line[:i], bytes.TrimPrefix(line[i+1:], []byte(" "))
		}
		switch string(field) {
		case "event":
			kind = string(value)
		case "data":
			if len(data)+len(value)+1 > s.max {
				return Event{}, errEventTooLong
			}
			data = append(append(data, value...), '\n')
			hasData = true
		case "id":
			if bytes.IndexByte(value, 0) < 0 {
				s.lastID = string(value)
			}
		}
	}
}
