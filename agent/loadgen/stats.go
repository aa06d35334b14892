package loadgen

import (
	"math"
	"sort"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// summarize fills a combination's figures from its request records. Failed
// requests are counted and their errors kept, but left out of every figure.
// TPS and ITL need token chunks in a read after the first token's, and the
// role chunk one that was sent, so requests without them are left out of
// those figures only; a combination with no such request has no TPS (N 0):
// not measurable, which is neither 0 nor infinity. TPS's mean is the
// pooled rate, every decode token over every decode time; its percentiles,
// min and max are of the requests' own rates. The TTFT tail alone counts
// the failed requests, as answers that never started, for a judgement by
// a percentile.
func summarize(c *protocol.Combination, recs []protocol.RequestRecord) {
	var ttft, tps, e2e, itl, ttfb, role, prompt, completion []float64
	errIndex := map[string]int{}
	c.Errors = nil
	c.Completed, c.Failed = 0, 0
	c.CachedPromptTokens, c.CachedRequests = 0, 0
	var tokens, decodeTokens, decodeSec float64
	for _, rec := range recs {
		if rec.Error != "" {
			c.Failed++
			if i, ok := errIndex[rec.Error]; ok {
				c.Errors[i].Count++
			} else {
				errIndex[rec.Error] = len(c.Errors)
				c.Errors = append(c.Errors, protocol.ErrorCount{Error: rec.Error, Count: 1})
			}
			continue
		}
		c.Completed++
		ttft = append(ttft, rec.TTFT)
		e2e = append(e2e, rec.E2E)
		ttfb = append(ttfb, rec.TTFB)
		if rec.TPS > 0 {
			tps = append(tps, rec.TPS)
			decodeTokens += float64(rec.DecodeTokens)
			decodeSec += rec.LastToken - rec.TTFT
		}
		if rec.ITL > 0 {
			itl = append(itl, rec.ITL)
		}
		if rec.RoleChunk > 0 {
			role = append(role, rec.RoleChunk)
		}
		if rec.PromptTokens > 0 {
			prompt = append(prompt, float64(rec.PromptTokens))
		}
		completion = append(completion, float64(rec.CompletionTokens))
		if rec.CachedTokens > 0 {
			c.CachedRequests++
			c.CachedPromptTokens += rec.CachedTokens
		}
		tokens += float64(rec.CompletionTokens)
	}
	sort.Slice(c.Errors, func(i, j int) bool { return c.Errors[i].Count > c.Errors[j].Count })
	c.TTFT, c.TPS, c.E2E, c.ITL = stats(ttft), stats(tps), stats(e2e), stats(itl)
	sort.Float64s(ttft)
	c.Tail = protocol.NewTTFTTail(ttft, c.Failed)
	if decodeSec > 0 {
		// Tokens and times add across requests; a mean of per-request rates
		// would let one short request's rate outweigh every long one.
		c.TPS.Mean = decodeTokens / decodeSec
	}
	c.TTFB, c.RoleChunk = stats(ttfb), stats(role)
	c.PromptTokens, c.CompletionTokens = stats(prompt), stats(completion)
	if c.WallSec > 0 {
		c.OutputTokensPerSec = tokens / c.WallSec
	}
	c.Requests = recs
}

// stats summarises values with nearest-rank percentiles; no values give zeros.
func stats(v []float64) protocol.Stats {
	if len(v) == 0 {
		return protocol.Stats{}
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	var sum float64
	for _, x := range s {
		sum += x
	}
	return protocol.Stats{
		N: len(s), Mean: sum / float64(len(s)),
		P50: nearestRank(s, 50), P90: nearestRank(s, 90), P99: nearestRank(s, 99),
		Min: s[0], Max: s[len(s)-1],
	}
}

// nearestRank is the smallest value with at least p percent of the values at or below it.
func nearestRank(sorted []float64, p float64) float64 {
	k := int(math.Ceil(p / 100 * float64(len(sorted))))
	if k < 1 {
		k = 1
	}
	return sorted[k-1]
}
