package simlab_test

import (
	"bytes"
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// slowLink is a TCP proxy on loopback between one NATS client and its
// server that holds back what the client sends by a fixed lag, as a server
// too busy to read its clients does (200 agents on two cores): the client's
// requests, subscriptions and unsubscriptions reach the server late, in
// order. The lag begins with the first watched string the client sends, so
// that it connects and announces itself first. What the server sends
// passes at once.
type slowLink struct {
	ln     net.Listener
	target string
	// watch is looked for in what the client sends; each time it passes
	// the proxy, the time the client sent it goes to seen.
	watch []byte
	seen  chan time.Time

	mu    sync.Mutex
	lag   time.Duration
	delay time.Duration // lag once the watched string was seen
	conns []net.Conn
}

// newSlowLink proxies to target (host:port) and closes with the test.
func newSlowLink(t *testing.T, target, watch string, lag time.Duration) *slowLink {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &slowLink{ln: ln, target: target, watch: []byte(watch), seen: make(chan time.Time, 64), lag: lag}
	go s.accept()
	t.Cleanup(func() {
		_ = ln.Close()
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, c := range s.conns {
			_ = c.Close()
		}
	})
	return s
}

// addr is the proxy's host:port.
func (s *slowLink) addr() string { return s.ln.Addr().String() }

// lift ends the lag for what clients send from now on.
func (s *slowLink) lift() {
	s.mu.Lock()
	s.lag, s.delay = 0, 0
	s.mu.Unlock()
}

func (s *slowLink) accept() {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", s.target)
		if err != nil {
			_ = c.Close()
			continue
		}
		s.mu.Lock()
		s.conns = append(s.conns, c, up)
		s.mu.Unlock()
		go func() { _, _ = io.Copy(c, up); _ = c.Close() }()
		go s.upstream(c, up)
	}
}

// chunk is what the client sent at one time.
type chunk struct {
	data []byte
	due  time.Time
}

// upstream reads what the client sends at once (so the client never
// blocks on it) and forwards each chunk when its delay is over, in order.
func (s *slowLink) upstream(c, up net.Conn) {
	q := make(chan chunk, 4096)
	go func() {
		defer func() { _ = up.Close() }()
		for ch := range q {
			time.Sleep(time.Until(ch.due)) // a fixed delay is the point of this proxy
			if _, err := up.Write(ch.data); err != nil {
				return
			}
		}
	}()
	defer close(q)
	var tail []byte // the end of the last chunk, for a watched string split across two
	buf := make([]byte, 64<<10)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			now := time.Now()
			data := bytes.Clone(buf[:n])
			joined := append(tail, data...)
			s.mu.Lock()
			if bytes.Contains(joined, s.watch) {
				s.delay = s.lag
				select {
				case s.seen <- now:
				default:
				}
			}
			tail = bytes.Clone(joined[max(0, len(joined)-len(s.watch)+1):])
			due := now.Add(s.delay)
			s.mu.Unlock()
			q <- chunk{data: data, due: due}
		}
		if err != nil {
			return
		}
	}
}
