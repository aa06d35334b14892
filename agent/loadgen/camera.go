package loadgen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// camera is one closed-loop client with its own keep-alive connection, so
// that cameras never queue behind each other inside the client. This file
// is its life, in order: made once and kept across a run's combinations
// (cameras), it takes request numbers in the closed loop (closedLoop; on
// a frame clock in paced.go, sending without waiting in sustained.go),
// sends each request (send, do: conn.go writes it) and reads the answer
// (stream: stream.go turns its events into the record; a whole answer in
// nostream.go).
type camera struct {
	conn *conn
	sc   *sseScanner
	st   streamState
	head []byte
	bufs net.Buffers
	// loop is the X-Vlmfleet-Loop field of its next request (loopheader.go).
	loop []byte
	// since is the time after t0; tests replay recorded streams on their
	// own clock.
	since func(time.Time) time.Duration
}

func newCamera() *camera {
	return &camera{sc: newSSEScanner(16 << 10), head: make([]byte, 0, 512), since: time.Since}
}

// cameras returns n cameras, keeping the connections of earlier combinations.
func (r *runner) cameras(n int) []*camera {
	for len(r.cams) < n {
		r.cams = append(r.cams, newCamera())
	}
	return r.cams[:n]
}

// loop runs the closed loop: every camera sends its next request as soon as
// its previous one has ended, taking request numbers from one counter until
// total have been sent, so never more than len(cams) are in flight. recs nil
// means a warm-up whose records are thrown away.
func (r *runner) loop(ctx context.Context, cams []*camera, pc protocol.PlannedCombo, total int, pics pictures,
	recs []protocol.RequestRecord, onReq func(protocol.RequestRecord, Progress), maxInFlight *atomic.Int64) {
	build := func(i int) []string { return r.segments(pics, i, pc.Images) }
	send := func(ctx context.Context, cam *camera, _ int, segs []string, rec *protocol.RequestRecord) {
		r.send(ctx, cam, segs, rec)
	}
	r.closedLoop(ctx, cams, pc.Images, total, build, send, recs, onReq, maxInFlight)
}

// sendFunc sends request number i, laid out as segs, on cam and records
// it in rec.
type sendFunc func(ctx context.Context, cam *camera, i int, segs []string, rec *protocol.RequestRecord)

// closedLoop is loop for any request: build lays out request i before its
// time starts, and send sends it. Against the simulator the records' starts
// are put on its clock once the loop is over (onSimClock).
func (r *runner) closedLoop(ctx context.Context, cams []*camera, images, total int, build func(i int) []string, send sendFunc,
	recs []protocol.RequestRecord, onReq func(protocol.RequestRecord, Progress), maxInFlight *atomic.Int64) {
	var (
		next, inFlight atomic.Int64
		wg             sync.WaitGroup
	)
	tally := newLoopTally(recs, onReq)
	start := time.Now()
	id := loopID()
	for ci, cam := range cams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= total {
					return
				}
				segs := build(i)
				rec := protocol.RequestRecord{Camera: ci, Seq: i, Images: images}
				now := inFlight.Add(1)
				if maxInFlight != nil {
					for m := maxInFlight.Load(); now > m && !maxInFlight.CompareAndSwap(m, now); m = maxInFlight.Load() {
					}
				}
				cam.loop = appendLoopField(cam.loop[:0], id, i, total, len(cams))
				rec.Start = time.Since(start).Seconds()
				send(ctx, cam, i, segs, &rec)
				in := inFlight.Add(-1)
				at, timed := cam.simArrival()
				tally.keep(i, rec, at, timed && rec.Error == "", int(in))
			}
		}()
	}
	wg.Wait()
	if recs != nil {
		onSimClock(recs, tally.arrive)
	}
}

// send sends one request on cam, telling Hooks.InFlight while it runs.
func (r *runner) send(ctx context.Context, cam *camera, segs []string, rec *protocol.RequestRecord) {
	if r.inFlight != nil {
		r.inFlight(1)
		defer r.inFlight(-1)
	}
	cam.do(ctx, r, segs, rec)
}

// do sends one request and reads its stream into rec. The connection is
// made (or reused) first; every time then runs from t0, taken just before
// the request's bytes are written: connecting is the client's business, not
// the engine's latency.
func (c *camera) do(ctx context.Context, r *runner, segs []string, rec *protocol.RequestRecord) {
	var (
		resp *http.Response
		t0   time.Time
		err  error
	)
	// A request that fails before its stream is read must not leave the
	// previous one's arrival behind.
	c.st.simArrived = false
	for attempt := 0; attempt < 2; attempt++ {
		if c.conn == nil {
			if c.conn, err = r.ep.dial(ctx); err != nil {
				rec.Error = r.describe(ctx, err)
				return
			}
		}
		// The deadline counts from t0, so that a request that times out
		// had its whole timeout as its record measures it.
		t0 = time.Now()
		if r.timeout > 0 {
			_ = c.conn.nc.SetDeadline(t0.Add(r.timeout))
		}
		nc := c.conn.nc
		stop := context.AfterFunc(ctx, func() { _ = nc.SetDeadline(time.Unix(1, 0)) })
		resp, err = c.conn.send(r.ep, c, segs)
		if err == nil {
			defer stop()
			break
		}
		stop()
		reused := c.conn.reused
		c.close()
		if !reused || !staleConn(err) || ctx.Err() != nil {
			rec.E2E = time.Since(t0).Seconds()
			rec.Error = r.describe(ctx, err)
			return
		}
	}
	rec.TTFB = time.Since(t0).Seconds()
	keep := false
	defer func() {
		if keep && !resp.Close {
			resp.Body.Close() // read to its end already
			_ = c.conn.nc.SetDeadline(time.Time{})
			c.conn.reused = true
			return
		}
		// Closing the connection first: Body.Close would otherwise read
		// whatever the engine still sends.
		c.close()
		resp.Body.Close()
	}()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		rec.E2E = time.Since(t0).Seconds()
		rec.Error = fmt.Sprintf("HTTP %d: %s", resp.StatusCode, excerpt(b, 200))
		return
	}
	if r.noStream {
		keep = c.whole(ctx, r, resp.Body, t0, rec)
		return
	}
	if ct := resp.Header.Get("Content-Type"); strings.HasPrefix(ct, "application/json") {
		// The engine answered in one piece: it ignored "stream": true.
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		rec.E2E = time.Since(t0).Seconds()
		rec.Error = fmt.Sprintf("HTTP 200 but not a stream (Content-Type %s): %s", ct, excerpt(b, 200))
		return
	}
	keep = c.stream(ctx, r, resp.Body, t0, rec)
}

// stream reads the SSE body as it arrives into rec. Every event completed
// by one read gets the time that read returned. It reports whether the
// body was read to its end, so that the connection can carry the camera's
// next request.
func (c *camera) stream(ctx context.Context, r *runner, body io.Reader, t0 time.Time, rec *protocol.RequestRecord) bool {
	sc, st := c.sc, &c.st
	sc.reset()
	st.reset(rec)
	for !st.over() {
		p, err := sc.space()
		if err != nil {
			st.fail(err.Error())
			break
		}
		n, err := body.Read(p)
		st.arrived(c.since(t0))
		sc.wrote(n)
		for !st.over() {
			data, ok := sc.next()
			if !ok {
				break
			}
			st.event(data)
		}
		if err == nil {
			continue
		}
		if !errors.Is(err, io.EOF) {
			st.broke(r.describe(ctx, err))
			break
		}
		// Some servers close right after the last event, without its
		// blank line.
		for !st.over() {
			data, ok := sc.end()
			if !ok {
				break
			}
			st.event(data)
		}
		st.ended()
		break
	}
	drained := !st.wasBroken && st.failure == "" && (!st.done || drain(body))
	st.finish()
	return drained && rec.Error == ""
}

// simArrival is when the simulator says the camera's last request arrived
// on its clock (SimTimings.Arrive); ok is false when it did not time it.
func (c *camera) simArrival() (at float64, ok bool) {
	return c.st.simArrive, c.st.simArrived
}

func (c *camera) close() {
	c.conn.close()
	c.conn = nil
}

// describe turns a transport error into a short text that is the same for
// every camera, so that identical failures count together.
func (r *runner) describe(ctx context.Context, err error) string {
	switch {
	case ctx.Err() != nil:
		return "cancelled"
	case errors.Is(err, os.ErrDeadlineExceeded):
		return fmt.Sprintf("request timed out after %s", r.timeout)
	}
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Err != nil {
		if oe.Op == "dial" {
			return fmt.Sprintf("dial %s: %v", r.ep.addr, innerMost(oe.Err))
		}
		return fmt.Sprintf("%s: %v", oe.Op, innerMost(oe.Err))
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return "connection closed by the server"
	}
	return err.Error()
}

// drain reads what follows [DONE] (the end of the chunked body) so that the
// connection can be used again.
func drain(body io.Reader) bool {
	n, err := io.Copy(io.Discard, io.LimitReader(body, 1<<20))
	return err == nil && n < 1<<20
}

func innerMost(err error) error {
	for {
		u := errors.Unwrap(err)
		if u == nil {
			return err
		}
		err = u
	}
}
