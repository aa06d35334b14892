package loadgen

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"syscall"
	"time"
	"unsafe"
)

// endpoint is where and how requests are sent, fixed for a run.
type endpoint struct {
	scheme, host, addr, path string
	serverName               string
	// head is the request head up to its last two fields: the loop's
	// (loopheader.go) and Content-Length.
	head []byte
}

func newEndpoint(base string, apiKey string) (*endpoint, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("base URL %q: want http(s)://HOST:PORT/v1", base)
	}
	e := &endpoint{scheme: u.Scheme, host: u.Host, addr: u.Host, path: u.EscapedPath() + "/chat/completions", serverName: u.Hostname()}
	if u.Port() == "" {
		port := "80"
		if u.Scheme == "https" {
			port = "443"
		}
		e.addr = net.JoinHostPort(u.Hostname(), port)
	}
	head := "POST " + e.path + " HTTP/1.1\r\nHost: " + e.host +
		"\r\nUser-Agent: " + ClientName + "\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\n"
	if apiKey != "" {
		head += "Authorization: Bearer " + apiKey + "\r\n"
	}
	e.head = []byte(head)
	return e, nil
}

// conn is a camera's keep-alive connection. The client speaks HTTP/1.1 on
// it directly instead of through net/http's Transport: the request goes out
// in one writev from the prebuilt parts, and the response is read on the
// camera's own goroutine, with no hand-off to a transport goroutine between
// the engine's bytes and the clock (see docs/benchmarks.md for the cost
// that saved).
type conn struct {
	nc     net.Conn
	br     *bufio.Reader
	reused bool
}

func (e *endpoint) dial(ctx context.Context) (*conn, error) {
	d := net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	nc, err := d.DialContext(ctx, "tcp", e.addr)
	if err != nil {
		return nil, err
	}
	if e.scheme == "https" {
		tc := tls.Client(nc, &tls.Config{ServerName: e.serverName, NextProtos: []string{"http/1.1"}})
		if err := tc.HandshakeContext(ctx); err != nil {
			nc.Close()
			return nil, err
		}
		nc = tc
	}
	return &conn{nc: nc, br: bufio.NewReaderSize(nc, 16<<10)}, nil
}

func (c *conn) close() {
	if c != nil {
		c.nc.Close()
	}
}

// stringBytes views a string's bytes without copying them. The request
// parts are only ever read (by writev), and copying every picture of a
// combination would cost as much memory again as the picture set.
func stringBytes(s string) []byte {
	if s == "" {
		return nil
	}
	return unsafe.Slice(unsafe.StringData(s), len(s))
}

// send writes the request: head, Content-Length and body parts in one
// writev, and reads the response head. The camera's scratch buffers are
// reused, so that a request allocates next to nothing.
func (c *conn) send(e *endpoint, cam *camera, segs []string) (*http.Response, error) {
	head := append(cam.head[:0], e.head...)
	head = append(head, cam.loop...)
	head = append(head, "Content-Length: "...)
	head = strconv.AppendInt(head, bodyLen(segs), 10)
	head = append(head, "\r\n\r\n"...)
	cam.head = head
	bufs := append(cam.bufs[:0], head)
	for _, s := range segs {
		bufs = append(bufs, stringBytes(s))
	}
	cam.bufs = bufs
	w := bufs // WriteTo consumes the slice it is called on
	if _, err := w.WriteTo(c.nc); err != nil {
		return nil, &sendError{err: err}
	}
	// Peek first: ReadResponse reports a connection closed before any byte
	// as io.ErrUnexpectedEOF, like one closed halfway through the head.
	if _, err := c.br.Peek(1); err != nil {
		return nil, &sendError{err: err}
	}
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil {
		return nil, fmt.Errorf("reading the response head: %w", err)
	}
	return resp, nil
}

// sendError is a failure before any response byte arrived.
type sendError struct{ err error }

func (e *sendError) Error() string { return e.err.Error() }
func (e *sendError) Unwrap() error { return e.err }

// staleConn says whether a failure on a reused connection means that the
// server had closed it while idle: nothing came back, not even a status
// line. The request is then sent again on a new connection, as net/http
// does for requests it knows were not processed.
func staleConn(err error) bool {
	var se *sendError
	if !errors.As(err, &se) {
		return false
	}

	return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}
