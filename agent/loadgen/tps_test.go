package loadgen

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// burstEngine answers like a server whose tokens reach the client in
// bursts: the role chunk and the first `first` tokens in one write (as
// llama-server sends its role chunk with the first token), then the rest
// one write per token, gap apart, generated at 1/gap tokens per second.
func burstEngine(t *testing.T, first, total int, gap time.Duration) *fakeEngine {
	return newFakeEngine(t, func(s *sse, n int, req fakeRequest) {
		s.start()
		s.sleep(20 * time.Millisecond)
		var b strings.Builder
		b.WriteString("data: " + llamaRoleChunk + "\n\n")
		for i := 0; i < first; i++ {
			b.WriteString("data: " + tokenChunk("w ") + "\n\n")
		}
		s.raw(b.String())
		for i := first; i < total; i++ {
			s.sleep(gap)
			s.event(tokenChunk("w "))
		}
		s.raw("data: " + finishChunk + "\n\ndata: " + usageChunk(250, total) + "\n\ndata: [DONE]\n\n")
	})
}

// 31 of 32 tokens in one write, the 32nd one token-time later: the only
// decode the client saw is that one token over that gap. Counting the 31
// of the burst over it (the old rule) gave 31 times the engine's rate.
func TestTPSBurstOf31Of32(t *testing.T) {
	const rate = 10.0 // tokens/s: a gap long enough that scheduling jitter is small beside it
	f := burstEngine(t, 31, 32, time.Duration(float64(time.Second)/rate))
	c := measureOne(t, f.target(), oneCombo("480p", 1, 3, 0), testImages{n: 2})
	if c.Completed != 3 {
		t.Fatalf("completed %d, errors %v", c.Completed, c.Errors)
	}
	for _, r := range c.Requests {
		if r.DecodeTokens != 1 || r.CompletionTokens != 32 {
			t.Errorf("request %d: %d decode tokens of %d, want 1 of 32", r.Seq, r.DecodeTokens, r.CompletionTokens)
		}
		// Never faster than the engine wrote; slower only by the client's lateness.
		within(t, "request TPS", r.TPS, rate/3, rate*1.25)
	}
	if c.TPS.N != 3 {
		t.Errorf("TPS over %d requests, want 3", c.TPS.N)
	}
	within(t, "combination TPS", c.TPS.Mean, rate/3, rate*1.25)
	// The figure docs/benchmarks.md quotes, beside what the old rule,
	// (tokens-1)/(last-first) averaged over requests, made of the same stream.
	var old float64
	for _, r := range c.Requests {
		old += float64(r.CompletionTokens-1) / (r.LastToken - r.TTFT) / float64(len(c.Requests))
	}
	t.Logf("31 of 32 tokens in one write, written at %g tok/s: TPS %.1f tok/s (the old rule: %.1f)", rate, c.TPS.Mean, old)
}

// Every token in one write: nothing arrived after the first token's read,
// so no decode rate can be measured. That is not 0 tok/s, and not infinity.
func TestTPSAllTokensInOneWriteIsNotMeasurable(t *testing.T) {
	f := burstEngine(t, 32, 32, 0)
	c := measureOne(t, f.target(), oneCombo("480p", 2, 4, 0), testImages{n: 2})
	if c.Completed != 4 || c.Failed != 0 {
		t.Fatalf("completed %d failed %d (%v): a burst is a good answer", c.Completed, c.Failed, c.Errors)
	}
	for _, r := range c.Requests {
		if r.TPS != 0 || r.DecodeTokens != 0 || r.ITL != 0 || r.CompletionTokens != 32 {
			t.Errorf("request %d: TPS %g, ITL %g, decode tokens %d of %d; want no rate", r.Seq, r.TPS, r.ITL, r.DecodeTokens, r.CompletionTokens)
		}
	}
	if c.TPS != (protocol.Stats{}) {
		t.Errorf("combination TPS %+v, want none (N 0): not measurable", c.TPS)
	}
	if c.OutputTokensPerSec <= 0 {
		t.Errorf("output tokens/s %g: the tokens were delivered", c.OutputTokensPerSec)
	}
}

// The combination's rate adds tokens and times across requests: a short
// request with one decode token does not weigh as much as a long one.
func TestTPSPoolsTokensAndTimes(t *testing.T) {
	recs := []protocol.RequestRecord{
		{TTFT: 1, LastToken: 1.01, DecodeTokens: 1, TPS: 100, CompletionTokens: 2},
		{TTFT: 1, LastToken: 2, DecodeTokens: 50, TPS: 50, CompletionTokens: 51},
		{TTFT: 1, LastToken: 1, CompletionTokens: 32},            // one burst: no rate
		{Error: "HTTP 500: boom", LastToken: 9, DecodeTokens: 9}, // failed: left out
	}
	var c protocol.Combination
	summarize(&c, recs)
	if want := 51 / 1.01; math.Abs(c.TPS.Mean-want) > 1e-9 {
		t.Errorf("TPS mean %g, want %g (51 tokens over 1.01 s), not the mean of rates 75", c.TPS.Mean, want)
	}
	if c.TPS.N != 2 || c.TPS.Min != 50 || c.TPS.Max != 100 {
		t.Errorf("TPS %+v, want the two measurable requests' rates as N, min and max", c.TPS)
	}
	if c.Completed != 3 || c.Failed != 1 {
		t.Errorf("completed %d failed %d", c.Completed, c.Failed)
	}
}

// With one token per read the rule is the familiar one: (tokens-1) over
// the first to the last token; with several tokens per chunk (usage counts
// more than the chunks) the tokens after the first read are in proportion.
func TestTPSOneTokenPerReadAndUsageCounts(t *testing.T) {
	const gap = 30 * time.Millisecond
	f := newFakeEngine(t, func(s *sse, n int, req fakeRequest) {
		s.event(vllmRoleChunk)
		for i := 0; i < 5; i++ {
			s.sleep(gap)
			s.event(tokenChunk("two words"))
		}
		s.event(usageChunk(100, 10)) // two tokens per chunk
		s.event("[DONE]")
	})
	c := measureOne(t, f.target(), oneCombo("480p", 1, 2, 0), testImages{n: 2})
	for _, r := range c.Requests {
		if r.CompletionTokens != 10 || r.DecodeTokens != 8 {
			t.Errorf("request %d: decode tokens %d of %d, want 8 of 10", r.Seq, r.DecodeTokens, r.CompletionTokens)
		}
		span := r.LastToken - r.TTFT
		within(t, "TPS", r.TPS, 8/span*0.999999, 8/span*1.000001)
		within(t, "ITL", r.ITL, span/4*0.999999, span/4*1.000001)
	}
}
