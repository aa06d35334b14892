package loadgen

import (
	"encoding/json"
	"math"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// SimTimingsKey is the field in which the simulated engine (agent/simengine)
// reports a request's times in its own clock: seconds from
// the request's arrival on the wall-clock scale it runs at. The simulator
// runs many times faster than the device it stands for, so every real
// millisecond the host loses between it and this client would become many
// simulated ones; its own times have none of that. Real engines never send
// the field, and a run against the simulator is labelled simulated.
const SimTimingsKey = "sim_timings"

// SimTimings are one request's times from its arrival at the simulator, in
// seconds on the wall-clock scale it runs at (the device's seconds divided
// by its speed-up): what a client with no delays of its own would measure.
type SimTimings struct {
	TTFT      float64 `json:"ttft_s"`
	LastToken float64 `json:"last_token_s"`
	E2E       float64 `json:"e2e_s"`
	// Arrive is when the request arrived, on the same clock: seconds on
	// the same scale since the simulator started. Its clock holds while it
	// reads and parses a request, which a large picture makes tens of
	// milliseconds of the host's time per request; a closed loop takes its
	// requests' starts from here (closedLoop), so that those holds do not
	// sit between an answer's end and its camera's next start.
	Arrive *float64 `json:"arrive_s,omitempty"`
	// For a frame of a frame clock (FrameHeader): Late is how long after
	// its tick the frame arrived, seconds (0 when it came in time and was
	// held until its tick), and NextTick the tick whose frame the camera
	// takes next, the ticks before it falling due while this answer ran.
	Late     float64 `json:"late_s,omitempty"`
	NextTick *int    `json:"next_tick,omitempty"`
}

// frameTimings reads what the simulator said of a frame (SimTimings'
// Late and NextTick); ok is false when it said nothing usable.
func frameTimings(raw []byte) (late float64, next int, ok bool) {
	var st SimTimings
	if len(raw) == 0 || json.Unmarshal(raw, &st) != nil || st.NextTick == nil || *st.NextTick < 0 ||
		math.IsNaN(st.Late) || math.IsInf(st.Late, 0) || st.Late < 0 {
		return 0, 0, false
	}
	return st.Late, *st.NextTick, true
}

// applySimTimings puts the simulator's own times in place of the ones this
// client measured, and the figures that follow from them, and returns when
// the request arrived on the simulator's clock (ok false when it did not
// say, or its times were not used). Anything that is not a consistent set
// of finite, non-negative times leaves the record as measured.
func applySimTimings(raw []byte, rec *protocol.RequestRecord, chunks int) (arrive float64, ok bool) {
	var st SimTimings
	if json.Unmarshal(raw, &st) != nil {
		return 0, false
	}
	for _, v := range []float64{st.TTFT, st.LastToken, st.E2E} {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return 0, false
		}
	}
	if st.LastToken < st.TTFT || st.E2E < st.LastToken {
		return 0, false
	}
	rec.TTFT, rec.LastToken, rec.E2E = st.TTFT, st.LastToken, st.E2E
	rec.TPS, rec.ITL, rec.DecodeTokens = 0, 0, 0
	if span := st.LastToken - st.TTFT; span > 0 {
		// The simulator's clock has no bursts: every token after the
		// first has its own decode time, so the familiar rule holds.
		if rec.CompletionTokens > 1 {
			rec.DecodeTokens = rec.CompletionTokens - 1
			rec.TPS = float64(rec.DecodeTokens) / span
		}
		if chunks > 1 {
			rec.ITL = span / float64(chunks-1)
		}
	}
	if a := st.Arrive; a != nil && !math.IsNaN(*a) && !math.IsInf(*a, 0) && *a >= 0 {
		return *a, true
	}
	return 0, false
}
