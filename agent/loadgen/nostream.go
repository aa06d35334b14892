package loadgen

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// maxWholeAnswer bounds an answer read in one piece: a long answer of
// tool calls is some kilobytes, and a broken server must not make the
// client buffer without limit.
const maxWholeAnswer = 16 << 20

// wholeAnswer is what a chat completion sent in one piece says that the
// measurement needs.
type wholeAnswer struct {
	Choices []struct {
		Message struct {
			Content          string          `json:"content"`
			ReasoningContent string          `json:"reasoning_content"`
			ToolCalls        json.RawMessage `json:"tool_calls"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
	Error json.RawMessage `json:"error"`
	// Sim is the simulator's own times (SimTimingsKey).
	Sim json.RawMessage `json:"sim_timings"`
}

// whole reads an answer sent in one piece into rec: it has no first
// token of its own, so its latency, to the body's end, is all there is
// to time, and its token counts are usage's. It reports whether the body
// was read to its end, so that the connection can be used again.
func (c *camera) whole(ctx context.Context, r *runner, body io.Reader, t0 time.Time, rec *protocol.RequestRecord) bool {
	b, err := io.ReadAll(io.LimitReader(body, maxWholeAnswer+1))
	rec.E2E = c.since(t0).Seconds()
	rec.LastToken = rec.E2E
	switch {
	case err != nil:
		rec.Error = r.describe(ctx, err)
		return false
	case len(b) > maxWholeAnswer:
		rec.Error = fmt.Sprintf("answer longer than %d bytes", maxWholeAnswer)
		return false
	}
	var a wholeAnswer
	if err := json.Unmarshal(b, &a); err != nil {
		rec.Error = fmt.Sprintf("unreadable answer: %v: %s", err, excerpt(b, 120))
		return true
	}
	if len(a.Error) > 0 && string(a.Error) != "null" {
		rec.Error = "server error: " + errorMessage(a.Error)
		return true
	}
	answered := false
	for _, ch := range a.Choices {
		m := ch.Message
		answered = answered || m.Content != "" || m.ReasoningContent != "" ||
			(len(m.ToolCalls) > 0 && string(m.ToolCalls) != "null" && string(m.ToolCalls) != "[]")
		if ch.FinishReason != "" {
			rec.FinishReason = ch.FinishReason
		}
	}
	if a.Usage != nil {
		rec.PromptTokens, rec.CompletionTokens = a.Usage.PromptTokens, a.Usage.CompletionTokens
		rec.TokenSource = protocol.TokensFromUsage
	}
	if len(a.Sim) > 0 && string(a.Sim) != "null" {
		c.wholeSimTimings(a.Sim, rec)
	}
	if !answered {
		rec.Error = "no answer in the response"
	}
	return true
}

// wholeSimTimings puts the simulator's own latency in place of the one
// measured, as a stream's are (applySimTimings): reading and parsing a
// picture of megabytes takes the host milliseconds that the simulator's
// speed-up would multiply. An answer in one piece keeps no first token
// and no rate: a client without a stream sees neither.
func (c *camera) wholeSimTimings(raw []byte, rec *protocol.RequestRecord) {
	c.st.simArrive, c.st.simArrived = applySimTimings(raw, rec, 1)
	rec.TTFT, rec.TPS, rec.ITL, rec.DecodeTokens = 0, 0, 0, 0
	rec.LastToken = rec.E2E
}
