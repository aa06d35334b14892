package loadgen

import (
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// streamState measures one streamed answer as its body arrives. The
// camera reports each read of the body (arrived) and the SSE events that
// read completed (event); every event gets the time of that read, since
// that is when the client could first have seen it. finish then turns
// what the stream said into the request's record.
type streamState struct {
	rec *protocol.RequestRecord
	ci  chunkInfo // the event being read, reused

	// at is the time of the current read, after the request was sent.
	at time.Duration
	// reads counts the body's reads; firstRead is the one that delivered
	// the first token, and later counts the token chunks of later reads:
	// only those have a decode time of their own.
	reads, firstRead, later int
	chunks                  int // token chunks
	first, last             time.Duration

	done         bool   // [DONE] arrived
	finishReason string // the last finish_reason
	usage        bool
	completion   int // usage's completion_tokens
	sim          []byte
	// simArrive is when the request arrived on the simulator's clock
	// (SimTimings.Arrive), if simArrived.
	simArrive  float64
	simArrived bool

	// failure is why the stream was abandoned: an unreadable or error
	// event, or an SSE line over the limit.
	failure string
	// broken is the described error of a read that failed before the end.
	broken    string
	wasBroken bool
}

// reset starts the measurement of a new answer into rec, keeping buffers.
func (s *streamState) reset(rec *protocol.RequestRecord) {
	*s = streamState{rec: rec, sim: s.sim[:0]}
}

// over reports whether the stream has said all it will be heard for:
// [DONE], or a reason to abandon it.
func (s *streamState) over() bool { return s.done || s.failure != "" }

// arrived marks a read of the body that returned at: the events it
// completes share its time.
func (s *streamState) arrived(at time.Duration) {
	s.at = at
	s.reads++
}

// event takes the data of one SSE event. A chunk with choices but no
// token (vLLM's and llama-server's role-only chunk) before the first token
// is recorded as RoleChunk and is not the first token.
func (s *streamState) event(data []byte) {
	if string(data) == "[DONE]" {
		s.done = true
		s.rec.E2E = s.at.Seconds()
		return
	}
	ci := &s.ci
	if err := parseChunk(data, ci); err != nil {
		s.failure = fmt.Sprintf("unreadable stream chunk: %v: %s", err, excerpt(data, 120))
		return
	}
	if ci.errMsg != "" {
		s.failure = "server error in stream: " + ci.errMsg
		return
	}
	if ci.token {
		s.token()
	} else if ci.choices && s.chunks == 0 && s.rec.RoleChunk == 0 {
		s.rec.RoleChunk = s.at.Seconds()
	}
	if ci.finish != "" {
		s.finishReason = ci.finish
	}
	if ci.usage {
		s.usage = true
		s.completion, s.rec.PromptTokens = ci.completion, ci.prompt
	}
	s.engineFigures()
}

// token counts a token chunk of the current read.
func (s *streamState) token() {
	if s.chunks == 0 {
		s.first, s.firstRead = s.at, s.reads
	} else if s.reads != s.firstRead {
		s.later++
	}
	s.last = s.at
	s.chunks++
}

// engineFigures keeps what the event says of the prompt cache and of the
// engine's own timings. Usage's cached_tokens, when present, overrides
// llama.cpp's cache_n of the same event.
func (s *streamState) engineFigures() {
	ci, rec := &s.ci, s.rec
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
		s.sim = append(s.sim[:0], ci.sim...)
	}
}

// ended marks the end of the body in the current read: the answer ends
// there unless [DONE] said so before.
func (s *streamState) ended() {
	if s.rec.E2E == 0 {
		s.rec.E2E = s.at.Seconds()
	}
}

// broke marks a read that failed in the middle of the body; described is
// the failure as the camera words it.
func (s *streamState) broke(described string) {
	s.broken, s.wasBroken = described, true
	s.rec.E2E = s.at.Seconds()
}

// fail abandons the stream for a reason of the client's (an SSE line over
// the limit).
func (s *streamState) fail(why string) { s.failure = why }

// finish writes the token counts, times, rates and the error, if any, of
// the answer into the record.
func (s *streamState) finish() {
	rec := s.rec
	rec.FinishReason = s.finishReason
	rec.CompletionTokens = s.chunks
	rec.TokenSource = protocol.TokensFromChunks
	if s.usage && s.completion > 0 {
		rec.CompletionTokens = s.completion
		rec.TokenSource = protocol.TokensFromUsage
	}
	if s.chunks > 0 {
		rec.TTFT = s.first.Seconds()
		rec.LastToken = s.last.Seconds()
		rec.DecodeTokens = decodeTokens(rec.CompletionTokens, s.chunks, s.later)
		// The rate counts only what arrived after the first token's read,
		// over the time since that read: tokens that came in one burst with
		// the first have no decode time of their own.
		if span := (s.last - s.first).Seconds(); span > 0 && s.later > 0 {
			rec.TPS = float64(rec.DecodeTokens) / span
			rec.ITL = span / float64(s.later)
		}
		if len(s.sim) > 0 {
			s.simArrive, s.simArrived = applySimTimings(s.sim, rec, s.chunks)
		}
	}
	if e := s.errorText(); e != "" {
		rec.Error = e
	}
}

// errorText is why the answer does not count, "" when it does.
func (s *streamState) errorText() string {
	switch {
	case s.failure != "":
		return s.failure
	case s.wasBroken:
		return fmt.Sprintf("stream broken after %d token chunks: %s", s.chunks, s.broken)
	case !s.done && s.finishReason == "":
		return fmt.Sprintf("stream ended without [DONE] or finish_reason after %d token chunks", s.chunks)
	case s.chunks == 0:
		if s.finishReason != "" {
			return "no token in the response (finish_reason " + s.finishReason + ")"
		}
		return "no token in the response"
	}
	return ""
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
