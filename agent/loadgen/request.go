package loadgen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// camera is one closed-loop client with its own keep-alive connection, so
// that cameras never queue behind each other inside the client.
type camera struct {
	conn *conn
	sc   *sseScanner
	ci   chunkInfo
	head []byte
	bufs net.Buffers
	// loop is the X-Vlmfleet-Loop field of its next request (loopheader.go).
	loop []byte
}

func newCamera() *camera {
	return &camera{sc: newSSEScanner(16 << 10), head: make([]byte, 0, 512)}
}

func (c *camera) close() {
	c.conn.close()
	c.conn = nil
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
	for attempt := 0; attempt < 2; attempt++ {
		if c.conn == nil {
			if c.conn, err = r.ep.dial(ctx); err != nil {
				rec.Error = r.describe(ctx, err)
				return
			}
		}
		if r.timeout > 0 {
			_ = c.conn.nc.SetDeadline(time.Now().Add(r.timeout))
		}
		nc := c.conn.nc
		stop := context.AfterFunc(ctx, func() { _ = nc.SetDeadline(time.Unix(1, 0)) })
		t0 = time.Now()
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
	if ct := resp.Header.Get("Content-Type"); strings.HasPrefix(ct, "application/json") {
		// The engine answered in one piece: it ignored "stream": true.
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		rec.E2E = time.Since(t0).Seconds()
		rec.Error = fmt.Sprintf("HTTP 200 but not a stream (Content-Type %s): %s", ct, excerpt(b, 200))
		return
	}
	keep = c.stream(ctx, r, resp.Body, t0, rec)
}

// stream parses the SSE body as it arrives. Every event completed by one
// read gets the time that read returned. It reports whether the body was read to its end, so that the connection
// can carry the camera's next request.
func (c *camera) stream(ctx context.Context, r *runner, body io.Reader, t0 time.Time, rec *protocol.RequestRecord) bool {
	sc := c.sc
	sc.reset()
	var (
		chunks      int
		first, last time.Duration
		// reads counts the body's reads; firstRead is the one that
		// delivered the first token, and later the token chunks that came
		// in later reads: only those have a decode time of their own.
		reads, firstRead, later int
		done                    bool
		finish                  string
		usage                   bool
		completion              int
		failure                 string
		sim                     []byte
	)
	handle := func(data []byte, at time.Duration) {
		if string(data) == "[DONE]" {
			done = true
			rec.E2E = at.Seconds()
			return
		}
		ci := &c.ci
		if err := parseChunk(data, ci); err != nil {
			failure = fmt.Sprintf("unreadable stream chunk: %v: %s", err, excerpt(data, 120))
			return
		}
		if ci.errMsg != "" {
			failure = "server error in stream: " + ci.errMsg
			return
		}
		if ci.token {
			if chunks == 0 {
				first, firstRead = at, reads
			} else if reads != firstRead {
				later++
			}
			last = at
			chunks++
		} else if ci.choices && chunks == 0 && rec.RoleChunk == 0 {
			rec.RoleChunk = at.Seconds()
		}
		if ci.finish != "" {
			finish = ci.finish
		}
		if ci.usage {
			usage = true
			completion, rec.PromptTokens = ci.completion, ci.prompt
		}
		if ci.timings != nil {
			rec.Timings = decodeTimings(ci.timings)
			if n, ok := rec.Timings["cache_n"]; ok && n > 0 && n < 1<<31 {
				rec.CachedTokens = int(n)
			}
		}
		if ci.cached > 0 {
			rec.CachedTokens = ci.cached
		}
		if ci.sim != nil {
			sim = append(sim[:0], ci.sim...)
		}
	}
	var readErr error
	for !done && failure == "" {
		p, err := sc.space()
		if err != nil {
			failure = err.Error()
			break
		}
		n, err := body.Read(p)
		at := time.Since(t0)
		reads++
		sc.wrote(n)
		for failure == "" && !done {
			data, ok := sc.next()
			if !ok {
				break
			}
			handle(data, at)
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				for failure == "" && !done {
					data, ok := sc.end()
					if !ok {
						break
					}
					handle(data, at)
				}
				if rec.E2E == 0 {
					rec.E2E = at.Seconds()
				}
			} else {
				readErr = err
				rec.E2E = at.Seconds()
			}
			break
		}
	}
	drained := readErr == nil && failure == "" && (!done || drain(body))

	rec.FinishReason = finish
	rec.CompletionTokens = chunks
	rec.TokenSource = protocol.TokensFromChunks
	if usage && completion > 0 {
		rec.CompletionTokens = completion
		rec.TokenSource = protocol.TokensFromUsage
	}
	if chunks > 0 {
		rec.TTFT = first.Seconds()
		rec.LastToken = last.Seconds()
		rec.DecodeTokens = decodeTokens(rec.CompletionTokens, chunks, later)
		// The rate counts only what arrived after the first token's read,
		// over the time since that read: tokens that came in one burst with
		// the first have no decode time, and counting them over the time of
		// the few that followed made rates thousands of times too high.
		if span := (last - first).Seconds(); span > 0 && later > 0 {
			rec.TPS = float64(rec.DecodeTokens) / span
			rec.ITL = span / float64(later)
		}
	}
	if sim != nil && chunks > 0 {
		applySimTimings(sim, rec, chunks)
	}
	switch {
	case failure != "":
		rec.Error = failure
	case readErr != nil:
		rec.Error = fmt.Sprintf("stream broken after %d token chunks: %s", chunks, r.describe(ctx, readErr))
	case !done && finish == "":
		rec.Error = fmt.Sprintf("stream ended without [DONE] or finish_reason after %d token chunks", chunks)
	case chunks == 0:
		rec.Error = "no token in the response"
		if finish != "" {
			rec.Error += " (finish_reason " + finish + ")"
		}
	}
	return drained && rec.Error == ""
}

// decodeTokens is the completion tokens that came after the first token's
// read: the later token chunks, scaled by the tokens per chunk when the
// server counted more tokens than it sent chunks (several tokens per chunk).
func decodeTokens(completion, chunks, later int) int {
	if later == 0 || chunks == 0 || completion <= chunks {
		return later
	}
	return int(math.Round(float64(completion) * float64(later) / float64(chunks)))
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

// decodeTimings keeps the numbers of llama.cpp's timings object.
func decodeTimings(raw []byte) map[string]float64 {
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	out := make(map[string]float64, len(m))
	for k, v := range m {
		if f, ok := v.(float64); ok {
			out[k] = f
		}
	}
	return out
}
