package loadgen

import (
	"math"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// levelFigures are a level's figures and the window they were measured
// over.
type levelFigures struct {
	protocol.ProfileLevel
	windowSec float64
}

// profileFigures are a level's figures by genai-perf's definitions
// (docs/profiles.md): TTFT to the first content token; request latency to
// the last (to the whole answer when it is not streamed); ITL the time
// between them over the tokens after the first, as the server counted
// them; request throughput the completed requests over the window from
// the first request's start to the last answer's end, and output tokens
// per second over the same window. Failed requests count in none of them.
func profileFigures(recs []protocol.RequestRecord, osl int, stream bool) levelFigures {
	var f levelFigures
	first, last := math.Inf(1), math.Inf(-1)
	var n, itlN, promptN int
	var ttft, latency, itl, tokens, prompt float64
	for _, rec := range recs {
		first = math.Min(first, rec.Start)
		if rec.Error != "" {
			continue
		}
		n++
		last = math.Max(last, rec.Start+rec.E2E)
		lat := rec.E2E
		if stream && rec.LastToken > 0 {
			lat = rec.LastToken
		}
		latency += lat
		ttft += rec.TTFT
		if rec.CompletionTokens > 1 && stream {
			itl += (lat - rec.TTFT) / float64(rec.CompletionTokens-1)
			itlN++
		}
		tokens += float64(rec.CompletionTokens)
		if rec.CompletionTokens < osl {
			f.OSLShort++
		}
		if rec.PromptTokens > 0 {
			prompt += float64(rec.PromptTokens)
			promptN++
		}
	}
	if n == 0 {
		return f
	}
	f.windowSec = last - first
	f.RequestLatencyMs = latency / float64(n) * 1000
	f.OSLMean = tokens / float64(n)
	f.OSLHeld = f.OSLShort == 0
	if promptN > 0 {
		f.PromptTokens = prompt / float64(promptN)
	}
	if f.windowSec > 0 {
		f.RequestThroughput = float64(n) / f.windowSec
		f.OutputTokensPerSec = tokens / f.windowSec
	}
	if stream {
		f.TTFTMs = ptrTo(ttft / float64(n) * 1000)
		if itlN > 0 {
			f.ITLMs = ptrTo(itl / float64(itlN) * 1000)
		}
	}
	return f
}

func ptrTo(v float64) *float64 { return &v }

// nextAutoLevel is the automatic rule's next level after the levels
// measured so far, false when the rule stops: the last level failed
// requests, its request throughput grew less than 5 % over the one
// before, or it reached the ceiling. Levels double from 1, the last one
// capped at the ceiling.
func nextAutoLevel(measured []protocol.Combination, ceiling int) (int, bool) {
	if len(measured) == 0 {
		return 1, true
	}
	last := measured[len(measured)-1]
	if last.Failed > 0 || last.Profile == nil || last.Cameras >= ceiling {
		return 0, false
	}
	if len(measured) > 1 {
		prev := measured[len(measured)-2].Profile
		if prev != nil && last.Profile.RequestThroughput < prev.RequestThroughput*(1+plateauShare) {
			return 0, false
		}
	}
	return min(2*last.Cameras, ceiling), true
}

// plateauShare is the 5 % of the rule: less growth than this is a
// plateau, and a level this close to the highest throughput is as good.
const plateauShare = 0.05

// markMaxThroughput marks the max-throughput point of a series: the
// smallest measured level whose request throughput is within 5 % of the
// highest.
func markMaxThroughput(levels []protocol.Combination) {
	best := 0.0
	for _, c := range levels {
		if c.Profile != nil {
			best = math.Max(best, c.Profile.RequestThroughput)
		}
	}
	if best <= 0 {
		return
	}
	pick := -1
	for i, c := range levels {
		if c.Profile == nil || c.Profile.RequestThroughput < best*(1-plateauShare) {
			continue
		}
		if pick < 0 || c.Cameras < levels[pick].Cameras {
			pick = i
		}
	}
	levels[pick].Profile.MaxThroughput = true
}
