package access

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"
)

// Defaults of Options.BodyStallTimeout and Options.BodyMinRate.
const (
	defaultBodyStall   = 10 * time.Second
	defaultBodyMinRate = 16 << 10
)

// errBodyStalled is what a request body says once it has stopped
// arriving; the handlers answer it with 408.
var errBodyStalled = errors.New("the request body stopped arriving")

// deadlineBody reads a request body with a read deadline on its
// connection, moved at each read: a body that sends nothing for stall, or
// that after its first stall arrives slower than minRate bytes a second,
// fails its read with errBodyStalled. Without it a client that sends its
// headers and part of a body, then waits, holds what the request holds
// (an import's place, a goroutine and a connection) for as long as it
// likes. It is set by Handler on every change with a body.
type deadlineBody struct {
	io.ReadCloser
	rc      *http.ResponseController
	start   time.Time
	n       int64
	stall   time.Duration
	minRate int64
}

func (s *Guard) withBodyDeadline(w http.ResponseWriter, r *http.Request) {
	if r.Body == nil || r.Body == http.NoBody {
		return
	}
	r.Body = &deadlineBody{ReadCloser: r.Body, rc: http.NewResponseController(w), start: time.Now(),
		stall: s.bodyStall, minRate: s.bodyMinRate}
}

// deadline is the latest the next byte may arrive: stall from now, and no
// later than the body's rate allows (minRate bytes a second past its first
// stall).
func (b *deadlineBody) deadline(now time.Time) time.Time {
	d := now.Add(b.stall)
	if b.minRate > 0 {
		byRate := b.start.Add(b.stall + time.Duration(b.n*int64(time.Second)/b.minRate))
		if byRate.Before(d) {
			d = byRate
		}
	}
	return d
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	if b.rc != nil && b.rc.SetReadDeadline(b.deadline(time.Now())) != nil {
		b.rc = nil // a connection without deadlines: read as before
	}
	n, err := b.ReadCloser.Read(p)
	b.n += int64(n)
	var ne net.Error
	switch {
	case err == nil:
	case errors.Is(err, os.ErrDeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()):
		return n, fmt.Errorf("%w: no byte for %s, or under %d bytes a second, after %d bytes in %s",
			errBodyStalled, b.stall, b.minRate, b.n, time.Since(b.start).Round(time.Millisecond))
	case b.rc != nil:
		// The body is read (or broken): the handler may work on for longer
		// than stall, and net/http's own read that watches for the client
		// going away must not time out and cancel the request.
		_ = b.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}

// BodyStalledStatus is 408 for a request whose body stopped arriving,
// else status.
func BodyStalledStatus(err error, status int) int {
	if errors.Is(err, errBodyStalled) {
		return http.StatusRequestTimeout
	}
	return status
}
