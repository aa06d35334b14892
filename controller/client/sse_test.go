package client

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
	"unicode/utf8"
)

func readAll(t *testing.T, r io.Reader, max int) ([]Event, error) {
	t.Helper()
	s := newSSEReader(r, max)
	var out []Event
	for {
		ev, err := s.next()
		if err != nil {
			return out, err
		}
		out = append(out, ev)
	}
}

func TestSSEReader(t *testing.T) {
	for name, c := range map[string]struct {
		in   string
		want []Event
	}{
		"controller": {": connected\n\nevent: state\ndata: {\"a\":1}\n\n: ping\n\n",
			[]Event{{Kind: "state", Data: []byte(`{"a":1}`)}}},
		"multi-line data":   {"data: one\ndata:two\ndata\n\n", []Event{{Kind: "message", Data: []byte("one\ntwo\n")}}},
		"line endings":      {"\ufeffevent: a\r\ndata: 1\r\rdata: 2\r\n\r\n", []Event{{Kind: "a", Data: []byte("1")}, {Kind: "message", Data: []byte("2")}}},
		"one space only":    {"data:  x \n\n", []Event{{Kind: "message", Data: []byte(" x ")}}},
		"id persists":       {"id: 7\ndata: a\n\ndata: b\n\nid\ndata: c\n\n", []Event{{Kind: "message", ID: "7", Data: []byte("a")}, {Kind: "message", ID: "7", Data: []byte("b")}, {Kind: "message", Data: []byte("c")}}},
		"id with NUL":       {"id: 1\n\nid: a\x00b\ndata: x\n\n", []Event{{Kind: "message", ID: "1", Data: []byte("x")}}},
		"no data, no event": {"event: state\n\ndata: x\n\n", []Event{{Kind: "message", Data: []byte("x")}}},
		"empty data":        {"event: e\ndata\n\n", []Event{{Kind: "e", Data: []byte{}}}},
		"unknown fields":    {"retry: 10\nfoo: bar\ndata: x\n\n", []Event{{Kind: "message", Data: []byte("x")}}},
		"unfinished":        {"data: x\n\ndata: lost\n", []Event{{Kind: "message", Data: []byte("x")}}},
	} {
		// A byte at a time, too: events must not depend on how reads split.
		for _, r := range []io.Reader{strings.NewReader(c.in), iotest.OneByteReader(strings.NewReader(c.in))} {
			got, err := readAll(t, r, 1<<10)
			if err != io.EOF {
				t.Errorf("%s: ended with %v, want EOF", name, err)
			}
			for i := range got {
				if len(got[i].Data) == 0 {
					got[i].Data = []byte{}
				}
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("%s: got %q\nwant %q", name, got, c.want)
			}
		}
	}
}

// An event is dispatched at its blank line, without waiting for more of the
// stream: a CR-ended stream must not stall on the byte after the CR.
func TestSSEReaderDispatchesWithoutReadingAhead(t *testing.T) {
	pr, pw := io.Pipe()
	s := newSSEReader(pr, 1<<10)
	go pw.Write([]byte("data: x\r\r"))
	ev, err := s.next()
	if err != nil || string(ev.Data) != "x" {
		t.Fatalf("%q, %v", ev.Data, err)
	}
	pw.Close()
}

func TestSSEReaderBoundsEvents(t *testing.T) {
	if _, err := readAll(t, strings.NewReader("data: "+strings.Repeat("x", 100)+"\n\n"), 50); !errors.Is(err, errEventTooLong) {
		t.Errorf("long line: %v", err)
	}
	if _, err := readAll(t, strings.NewReader(strings.Repeat("data: xxxxxxxxxx\n", 10)+"\n"), 50); !errors.Is(err, errEventTooLong) {
		t.Errorf("long event: %v", err)
	}
}

// referenceSSE parses a whole stream the way the specification reads:
// normalise line ends, split, and keep only what a blank line ended.
func referenceSSE(in []byte) []Event {
	s := strings.TrimPrefix(string(in), "\ufeff")
	s = strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n")
	lines := strings.Split(s, "\n")
	lines = lines[:len(lines)-1] // the last piece never ended
	var out []Event
	var data []string
	kind, id, has := "", "", false
	for _, l := range lines {
		if l == "" {
			if has {
				k := kind
				if k == "" {
					k = "message"
				}
				out = append(out, Event{Kind: k, ID: id, Data: []byte(strings.Join(data, "\n"))})
			}
			data, kind, has = nil, "", false
			continue
		}
		if l[0] == ':' {
			continue
		}
		field, value, _ := strings.Cut(l, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "event":
			kind = value
		case "data":
			data, has = append(data, value), true
		case "id":
			if !strings.Contains(value, "\x00") {
				id = value
			}
		}
	}
	return out
}

func FuzzSSEReader(f *testing.F) {
	for _, s := range []string{
		": connected\n\nevent: progress\ndata: {\"done\":3}\n\n",
		"data: a\r\ndata: b\r\rid: 1\nevent\n\n",
		"\ufeffdata\n\nid: \x00\ndata:x\n\n",
		"event: a\n\n\n\rdata: 1\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		got, err := readAll(t, bytes.NewReader(in), 1<<20)
		if err != io.EOF {
			t.Fatalf("ended with %v", err)
		}
		want := referenceSSE(in)
		if len(got) != len(want) {
			t.Fatalf("%d events, the reference %d: %q vs %q", len(got), len(want), got, want)
		}
		for i := range got {
			if got[i].Kind != want[i].Kind || got[i].ID != want[i].ID || !bytes.Equal(got[i].Data, want[i].Data) {
				t.Fatalf("event %d: %q, the reference %q", i, got[i], want[i])
			}
		}
	})
}

func TestDecodeError(t *testing.T) {
	for _, c := range []struct {
		status int
		body   string
		want   string
	}{
		{400, `{"error": "workload.cameras[0]: 0, want 1..1024"}`, "controller answered 400 Bad Request: workload.cameras[0]: 0, want 1..1024"},
		{409, `{"error": "job j already ended (completed); nothing to cancel", "job": {}}`, "controller answered 409 Conflict: job j already ended (completed); nothing to cancel"},
		{502, "<html>\n<body>Bad\tGateway</body>\n</html>\n", "controller answered 502 Bad Gateway: <html> <body>Bad Gateway</body> </html>"},
		{500, "", "controller answered 500 Internal Server Error"},
		{599, `{"error": ""}`, `controller answered 599: {"error": ""}`},
		{413, strings.Repeat("x", 600), "controller answered 413 Request Entity Too Large: " + strings.Repeat("x", 512) + " …"},
	} {
		if got := decodeError(c.status, []byte(c.body)).Error(); got != c.want {
			t.Errorf("%d %q:\n got %q\nwant %q", c.status, c.body, got, c.want)
		}
	}
	if !errors.Is(decodeError(http.StatusNotFound, nil), ErrNotFound) || errors.Is(decodeError(http.StatusBadRequest, nil), ErrNotFound) {
		t.Error("ErrNotFound matches 404 and only 404")
	}
}

func FuzzDecodeError(f *testing.F) {
	f.Add(400, []byte(`{"error":"workload.cameras[0]: 0, want 1..1024"}`))
	f.Add(502, []byte("<html>\x00\xff</html>"))
	f.Add(404, []byte(`{"error": 1}`))
	f.Add(413, []byte(strings.Repeat("é", 400)))
	f.Fuzz(func(t *testing.T, status int, body []byte) {
		e := decodeError(status, body)
		if e.Status != status || !strings.HasPrefix(e.Error(), "controller answered ") {
			t.Fatalf("%#v: %q", e, e.Error())
		}
		var doc struct {
			Error string `json:"error"`
		}
		if jsonErr := json.Unmarshal(body, &doc); jsonErr == nil && strings.TrimSpace(doc.Error) != "" {
			if e.Message != doc.Error {
				t.Fatalf("message %q, the server said %q", e.Message, doc.Error)
			}
			return
		}
		if !utf8.ValidString(e.Message) || len(e.Message) > 4*maxOtherBody || strings.ContainsAny(e.Message, "\n\r\x00") {
			t.Fatalf("message %q is not one short printable line", e.Message)
		}
	})
}
