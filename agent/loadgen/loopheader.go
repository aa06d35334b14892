package loadgen

import (
	"strconv"
	"strings"
)

// LoopHeader is the request header that says where a request stands in its
// closed loop: "<loop id> <request number> <requests> <cameras>", numbers
// from 0. The simulated engine (agent/simengine) reads it to hold its own
// clock while the loop owes it requests, so that the host's delays between
// an answer's end and the camera's next request are not multiplied by its
// speed-up; every other server ignores an unknown header. The id is random
// per loop (warm-up and measurement are two loops) and says nothing else.
// Cameras on a frame clock (paced.go) send none: they owe the engine
// nothing between ticks.
const LoopHeader = "X-Vlmfleet-Loop"

func loopID() string { return strconv.FormatUint(randomSeed(), 36) }

// appendLoopField appends the header field of request seq of a loop of
// total requests shared by cameras cameras, with its line end.
func appendLoopField(b []byte, id string, seq, total, cameras int) []byte {
	b = append(b, LoopHeader...)
	b = append(b, ": "...)
	b = append(b, id...)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(seq), 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(total), 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(cameras), 10)
	return append(b, "\r\n"...)
}

// LoopField is what a LoopHeader field says.
type LoopField struct {
	ID                  string
	Seq, Total, Cameras int
}

// ParseLoopField reads a LoopHeader value; ok is false for anything that is
// not one a loop could have sent.
func ParseLoopField(v string) (f LoopField, ok bool) {
	parts := strings.Fields(v)
	if len(parts) != 4 || len(parts[0]) > 64 {
		return LoopField{}, false
	}
	var n [3]int
	for i, p := range parts[1:] {
		x, err := strconv.Atoi(p)
		if err != nil || x < 0 {
			return LoopField{}, false
		}
		n[i] = x
	}
	f = LoopField{ID: parts[0], Seq: n[0], Total: n[1], Cameras: n[2]}
	if f.Total < 1 || f.Cameras < 1 || f.Seq >= f.Total {
		return LoopField{}, false
	}
	return f, true
}
