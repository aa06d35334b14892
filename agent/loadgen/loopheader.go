package loadgen

import (
	"math"
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
// A sustained level (sustained.go) is one open loop, whose count of
// requests is not known ahead: its fields say 0 requests, and each
// camera's last request carries a fifth field, "last", after which that
// camera sends nothing more. Cameras on a frame clock (paced.go) send
// FrameHeader instead.
const LoopHeader = "X-Vlmfleet-Loop"

func loopID() string { return strconv.FormatUint(randomSeed(), 36) }

// appendLoopField appends the header field of request seq of a loop of
// total requests shared by cameras cameras, with its line end.
func appendLoopField(b []byte, id string, seq, total, cameras int) []byte {
	return append(appendLoopFields(b, id, seq, total, cameras), "\r\n"...)
}

// appendOpenLoopField appends the header field of request seq of an open
// loop of cameras cameras, with its line end; last marks the camera's
// last request.
func appendOpenLoopField(b []byte, id string, seq, cameras int, last bool) []byte {
	b = appendLoopFields(b, id, seq, 0, cameras)
	if last {
		b = append(b, " "+lastField...)
	}
	return append(b, "\r\n"...)
}

// lastField marks a camera's last request of an open loop.
const lastField = "last"

func appendLoopFields(b []byte, id string, seq, total, cameras int) []byte {
	b = append(b, LoopHeader...)
	b = append(b, ": "...)
	b = append(b, id...)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(seq), 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(total), 10)
	b = append(b, ' ')
	return strconv.AppendInt(b, int64(cameras), 10)
}

// LoopField is what a LoopHeader field says.
type LoopField struct {
	ID                  string
	Seq, Total, Cameras int
	// Open says the loop's count of requests is not known ahead (Total
	// 0); Last, that the request is its camera's last of an open loop.
	Open, Last bool
}

// ParseLoopField reads a LoopHeader value; ok is false for anything that is
// not one a loop could have sent.
func ParseLoopField(v string) (f LoopField, ok bool) {
	parts := strings.Fields(v)
	last := len(parts) == 5 && parts[4] == lastField
	if last {
		parts = parts[:4]
	}
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
	f = LoopField{ID: parts[0], Seq: n[0], Total: n[1], Cameras: n[2], Open: n[1] == 0, Last: last}
	if f.Cameras < 1 || (!f.Open && (f.Last || f.Seq >= f.Total)) {
		return LoopField{}, false
	}
	return f, true
}

// FrameHeader is the request header that says which frame of a frame
// clock a request carries: "<clock id> <camera> <tick> <cameras> <ticks>
// <interval>", numbers from 0, the interval in seconds on the wall clock.
// Only the simulated engine is sent it (Target.Simulated): it keeps the
// clock on its own, holding each frame until its tick and its clock at a
// tick whose frame has not arrived, so that the host's delays are not
// multiplied by its speed-up, and says in its answer which tick the camera
// takes next (SimTimings.NextTick).
const FrameHeader = "X-Vlmfleet-Frame"

// appendFrameField appends the header field of camera's frame at tick of
// a clock of ticks ticks per camera, with its line end.
func appendFrameField(b []byte, id string, camera, tick, cameras, ticks int, interval float64) []byte {
	b = append(b, FrameHeader...)
	b = append(b, ": "...)
	b = append(b, id...)
	for _, n := range []int{camera, tick, cameras, ticks} {
		b = append(b, ' ')
		b = strconv.AppendInt(b, int64(n), 10)
	}
	b = append(b, ' ')
	b = strconv.AppendFloat(b, interval, 'g', -1, 64)
	return append(b, "\r\n"...)
}

// FrameField is what a FrameHeader field says.
type FrameField struct {
	ID                           string
	Camera, Tick, Cameras, Ticks int
	// Interval is the seconds between a camera's ticks on the wall clock.
	Interval float64
}

// ParseFrameField reads a FrameHeader value; ok is false for anything
// that is not one a frame clock could have sent.
func ParseFrameField(v string) (f FrameField, ok bool) {
	parts := strings.Fields(v)
	if len(parts) != 6 || len(parts[0]) > 64 {
		return FrameField{}, false
	}
	var n [4]int
	for i, p := range parts[1:5] {
		x, err := strconv.Atoi(p)
		if err != nil || x < 0 {
			return FrameField{}, false
		}
		n[i] = x
	}
	t, err := strconv.ParseFloat(parts[5], 64)
	if err != nil || math.IsNaN(t) || math.IsInf(t, 0) || t <= 0 {
		return FrameField{}, false
	}
	f = FrameField{ID: parts[0], Camera: n[0], Tick: n[1], Cameras: n[2], Ticks: n[3], Interval: t}
	if f.Camera >= f.Cameras || f.Tick >= f.Ticks {
		return FrameField{}, false
	}
	return f, true
}
