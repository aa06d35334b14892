package measure

import (
	"context"
	"time"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// idleWindow is how long the idle device is sampled before the first
// combination, on the device's time scale: long enough for a few readings
// at the default interval, short next to any combination.
const idleWindow = 3 * time.Second

// idleFirstReading bounds the wait for the sampler's first reading: a tool
// takes a moment to start, and nvidia-smi probes its fields first.
const idleFirstReading = 20 * time.Second

// sampleIdle records the device's draw with nothing served, after the
// engine is up and before any warm-up, as the run's IdlePower. A run
// without telemetry, or whose source reads no power, spends no time here.
func (m *measurement) sampleIdle(ctx context.Context, tel *telemetryRecorder) {
	if tel.sampler == nil {
		return
	}
	source := powerSource(tel.sampler.Source())
	if source == "" {
		return
	}
	// On a sped-up simulator the window passes as fast as the device's
	// time does, yet always spans a few readings.
	window := m.clock.interval(idleWindow, 2*tel.interval)
	series, elapsed := tel.idle(ctx, window, idleFirstReading)
	if len(series) > protocol.MaxIdleSamples {
		series = series[:protocol.MaxIdleSamples]
	}
	mean, n := meanPower(series)
	if n == 0 {
		m.spec.Log.Info().Str("source", tel.sampler.Source()).Msg("no idle power: the telemetry read no power")
		return
	}
	m.run.IdlePower = &protocol.IdlePower{Source: source, MeanPowerW: mean,
		WindowSec: m.clock.seconds(elapsed.Seconds()), Series: series}
	m.spec.Log.Info().Float64("idle_power_w", mean).Int("samples", n).Msg("idle power sampled")
}

// idle waits for the next reading and, if it has power, keeps reading for
// window from it. It returns the readings and how long they span, or none
// when no reading came within firstWait, the first had no power, or ctx
// ended.
func (r *telemetryRecorder) idle(ctx context.Context, window, firstWait time.Duration) ([]protocol.TelemetrySample, time.Duration) {
	r.mu.Lock()
	start := len(r.samples)
	r.mu.Unlock()
	if !r.await(ctx, start+1, firstWait) {
		return nil, 0
	}
	r.mu.Lock()
	first := r.samples[start]
	r.mu.Unlock()
	if first.PowerW == nil {
		return nil, 0
	}
	began := time.Now()
	t := time.NewTimer(window)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return nil, 0
	case <-t.C:
	}
	elapsed := time.Since(began)
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]protocol.TelemetrySample(nil), r.samples[start:]...), elapsed
}

// await reports whether the recorder holds n samples within wait.
func (r *telemetryRecorder) await(ctx context.Context, n int, wait time.Duration) bool {
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		r.mu.Lock()
		have := len(r.samples)
		r.mu.Unlock()
		if have >= n {
			return true
		}
		select {
		case <-r.got:
		case <-r.done:
			return false
		case <-t.C:
			return false
		case <-ctx.Done():
			return false
		}
	}
}
