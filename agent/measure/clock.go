package measure

import (
	"time"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// clock is the one place where a simulated engine's time meets the
// device's. A simulator that runs speedup times faster than the device it
// stands for is measured in real time; everything a person reads (results,
// live progress) is on the device's scale, and everything that bounds or
// paces the measurement (request timeout, telemetry interval, the frame
// clock through loadgen.Target.Speedup) on the real one.
// speedup 1 is a real engine, where both scales are one.
type clock struct{ speedup float64 }

// seconds turns measured seconds into the device's.
func (c clock) seconds(s float64) float64 {
	if c.speedup <= 1 {
		return s
	}
	return s * c.speedup
}

// interval turns an interval of the device's time into real time, no
// shorter than floor.
func (c clock) interval(d, floor time.Duration) time.Duration {
	if c.speedup <= 1 {
		return d
	}
	return max(time.Duration(float64(d)/c.speedup), floor)
}

// workload is w with its request timeout, given in the device's time, on
// the real scale.
func (c clock) workload(w protocol.Workload) protocol.Workload {
	if c.speedup > 1 && w.RequestTimeoutSec > 0 {
		w.RequestTimeoutSec /= c.speedup
	}
	return w
}
