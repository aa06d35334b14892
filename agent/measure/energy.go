package measure

import (
	"github.com/vlmfleet/vlmfleet/agent/telemetry"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// powerSource is what a telemetry source's power readings cover, or ""
// for a source that reads none (the bare host).
func powerSource(telemetrySource string) string {
	switch telemetrySource {
	case telemetry.SourceTegrastats:
		return protocol.PowerSourceModuleInput
	case telemetry.SourceNvidiaSMI:
		return protocol.PowerSourceGPU
	case telemetry.SourceSimulated:
		return protocol.PowerSourceSimulated
	}
	return ""
}

// meanPower is the sample mean of the samples' power and how many carried
// one. The sampler reads at a fixed interval, so the sample mean is the
// window's mean power without weighting by time.
func meanPower(series []protocol.TelemetrySample) (float64, int) {
	sum, n := 0.0, 0
	for _, s := range series {
		if s.PowerW != nil {
			sum += *s.PowerW
			n++
		}
	}
	if n == 0 {
		return 0, 0
	}
	return sum / float64(n), n
}

// energyOf is what a combination drew over its measured window of
// windowSec seconds, from its own telemetry series; nil when the series
// has no power sample, so that "not known" never reads as zero. idle, when
// known, gives the energy above idle.
func energyOf(series []protocol.TelemetrySample, source string, windowSec float64, completed int, idle *protocol.IdlePower) *protocol.Energy {
	ps := powerSource(source)
	mean, n := meanPower(series)
	if ps == "" || n == 0 {
		return nil
	}
	e := &protocol.Energy{Source: ps, Samples: n, MeanPowerW: mean, WindowSec: windowSec}
	perAnswer := func(w float64) float64 {
		if completed == 0 {
			return 0
		}
		return w * windowSec / float64(completed)
	}
	e.JoulesPerAnswer = perAnswer(mean)
	if idle != nil && idle.Source == ps {
		above := perAnswer(mean - idle.MeanPowerW)
		e.AboveIdleJoulesPerAnswer = &above
	}
	return e
}
