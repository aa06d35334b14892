package loadgen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// camera is one closed-loop client with its own keep-alive connection, so
// that cameras never queue behind each other inside the client.
type camera struct {
	client *http.Client
	sc     *sseScanner
	ci     chunkInfo
}

func newCamera() *camera {
	tr := &http.Transport{
		Proxy:               nil, // the endpoint is measured directly, never through a proxy
		DialContext:         (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        1,
		MaxIdleConnsPerHost: 1,
		IdleConnTimeout:     5 * time.Minute,
		DisableCompression:  true,
		// A larger write buffer sends a 150 KB image body in fewer syscalls.
		WriteBufferSize: 64 << 10,
		ReadBufferSize:  16 << 10,
	}
	return &camera{client: &http.Client{Transport: tr}, sc: newSSEScanner(16 << 10)}
}

func (c *camera) close() { c.client.CloseIdleConnections() }

// do sends one request and reads its stream into rec. TTFT and every other
// time run from just before client.Do, which acquires this camera's idle
// connection and writes the prebuilt body: the moment the camera "sends".
func (c *camera) do(ctx context.Context, r *runner, segs []string, rec *protocol.RequestRecord) {
	rctx, cancel := ctx, context.CancelFunc(func() {})
	if r.timeout > 0 {
		rctx, cancel = context.WithTimeout(ctx, r.timeout)
	}
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, r.url, &bodyReader{segs: segs})
	if err != nil {
		rec.Error = fmt.Sprintf("building the request: %v", err)
		return
	}
	req.ContentLength = bodyLen(segs)
	req.GetBody = func() (io.ReadCloser, error) { return &bodyReader{segs: segs}, nil }
	req.Header = r.header

	t0 := time.Now()
	resp, err := c.client.Do(req)
	if err != nil {
		rec.E2E = time.Since(t0).Seconds()
		rec.Error = r.describe(ctx, rctx, err)
		return
	}
	rec.TTFB = time.Since(t0).Seconds()
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		rec.E2E = time.Since(t0).Seconds()
		rec.Error = fmt.Sprintf("HTTP %d: %s", resp.StatusCode, excerpt(b, 200))
		return
	}
	c.stream(ctx, rctx, r, resp.Body, t0, rec)
}

// stream parses the SSE body as it arrives. Every event completed by one
// read gets the time that read returned.
func (c *camera) stream(ctx, rctx context.Context, r *runner, body io.Reader, t0 time.Time, rec *protocol.RequestRecord) {
	sc := c.sc
	sc.reset()
	var (
		chunks      int
		first, last time.Duration
		done        bool
		finish      string
		usage       bool
		completion  int
		failure     string
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
				first = at
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
	if done && failure == "" {
		// Read to the end so that the connection goes back to the camera
		// for its next request instead of being closed.
		_, _ = io.Copy(io.Discard, io.LimitReader(body, 1<<20))
	}

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
		if span := (last - first).Seconds(); span > 0 {
			if rec.CompletionTokens > 1 {
				rec.TPS = float64(rec.CompletionTokens-1) / span
			}
			if chunks > 1 {
				rec.ITL = span / float64(chunks-1)
			}
		}
	}
	switch {
	case failure != "":
		rec.Error = failure
	case readErr != nil:
		rec.Error = fmt.Sprintf("stream broken after %d token chunks: %s", chunks, r.describe(ctx, rctx, readErr))
	case !done && finish == "":
		rec.Error = fmt.Sprintf("stream ended without [DONE] or finish_reason after %d token chunks", chunks)
	case chunks == 0:
		rec.Error = "no token in the response"
		if finish != "" {
			rec.Error += " (finish_reason " + finish + ")"
		}
	}
}

// describe turns a transport error into a short text that is the same for
// every camera, so that identical failures count together.
func (r *runner) describe(ctx, rctx context.Context, err error) string {
	switch {
	case ctx.Err() != nil:
		return "cancelled"
	case rctx.Err() != nil && errors.Is(rctx.Err(), context.DeadlineExceeded):
		return fmt.Sprintf("request timed out after %s", r.timeout)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Err != nil {
		if oe.Op == "dial" {
			return fmt.Sprintf("dial %s: %v", r.host, innerMost(oe.Err))
		}
		return fmt.Sprintf("%s: %v", oe.Op, innerMost(oe.Err))
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return "connection closed by the server"
	}
	return err.Error()
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
