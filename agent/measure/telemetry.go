package measure

import (
	"context"
	"sync"
	"time"

	"github.com/vlmfleet/vlmfleet/agent/telemetry"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// Telemetry is where and how often the hardware is sampled while a run
// measures.
type Telemetry struct {
	// Source is one of telemetry's sources, or telemetry.SourceOff; auto on
	// a simulated run is the simulated device's readings.
	Source string
	// Interval is in the device's time (default 500 ms).
	Interval time.Duration
	// SysRoot and Path are where the tools and files are looked up.
	SysRoot, Path string
}

// minSimInterval bounds how often a sped-up simulated device is sampled.
const minSimInterval = 20 * time.Millisecond

// telemetryRecorder samples the hardware while a run measures, hands each
// sample to the Sample hook, and cuts the samples into one window per
// measured combination.
type telemetryRecorder struct {
	sampler *telemetry.Sampler
	sink    func(protocol.TelemetrySample)
	// interval is the sampling interval on the real time scale.
	interval time.Duration
	// got is signalled after each sample, for a wait on the next one.
	got chan struct{}

	mu      sync.Mutex
	samples []protocol.TelemetrySample
	from    int

	cancel context.CancelFunc
	done   chan struct{}
}

// startTelemetry starts sampling until ctx ends or stop; a source that is
// unavailable is logged and the run goes on without telemetry.
func (m *measurement) startTelemetry(ctx context.Context) *telemetryRecorder {
	r := &telemetryRecorder{sink: m.hooks.Sample}
	t := m.spec.Telemetry
	source := t.Source
	if source == "" {
		source = telemetry.SourceAuto
	}
	if source == telemetry.SourceOff {
		return r
	}
	if m.run.Simulated && source == telemetry.SourceAuto {
		source = telemetry.SourceSimulated
	}
	interval := t.Interval
	if interval <= 0 {
		interval = 500 * time.Millisecond
	}
	if source == telemetry.SourceSimulated {
		// A simulated device running N times faster is sampled N times as
		// often, so each combination gets as many samples as on the device.
		interval = m.clock.interval(interval, minSimInterval)
	}
	s, err := telemetry.New(telemetry.Options{
		Source:    source,
		Interval:  interval,
		SysRoot:   t.SysRoot,
		Path:      t.Path,
		SimLoad:   m.load,
		SimDevice: m.run.Device.Name,
		SimPower:  m.run.Config.Power(),
		Log:       m.spec.Log,
	})
	if err != nil {
		m.spec.Log.Warn().Err(err).Str("source", source).Msg("telemetry unavailable; measuring without it")
		return r
	}
	r.sampler, r.interval, r.got = s, interval, make(chan struct{}, 1)
	ctx, r.cancel = context.WithCancel(ctx)
	r.done = make(chan struct{})
	go func() {
		defer close(r.done)
		err := s.Run(ctx, func(smp protocol.TelemetrySample) {
			r.mu.Lock()
			r.samples = append(r.samples, smp)
			r.mu.Unlock()
			select {
			case r.got <- struct{}{}:
			default:
			}
			if r.sink != nil {
				r.sink(smp)
			}
		})
		if err != nil && ctx.Err() == nil {
			m.spec.Log.Warn().Err(err).Msg("telemetry stopped")
		}
	}()
	return r
}

// mark starts the window of the combination about to be measured.
func (r *telemetryRecorder) mark() {
	r.mu.Lock()
	r.from = len(r.samples)
	r.mu.Unlock()
}

// window returns the samples since mark and their summary, and frees them:
// a long run keeps only what belongs to results.
func (r *telemetryRecorder) window() ([]protocol.TelemetrySample, *protocol.TelemetrySummary) {
	if r.sampler == nil {
		return nil, nil
	}
	r.mu.Lock()
	var w []protocol.TelemetrySample
	switch {
	case r.from < len(r.samples):
		w = append(w, r.samples[r.from:]...)
	case len(r.samples) > 0:
		// A combination shorter than the sampling interval: the latest
		// reading is the best that is known about it.
		w = append(w, r.samples[len(r.samples)-1])
	}
	if n := len(r.samples); n > 0 {
		r.samples = append(r.samples[:0], r.samples[n-1])
	}
	r.from = len(r.samples)
	r.mu.Unlock()
	if len(w) == 0 {
		return nil, nil
	}
	return w, telemetry.Summarize(w, r.sampler.Source())
}

// source is the telemetry source in use, "" when there is none.
func (r *telemetryRecorder) source() string {
	if r.sampler == nil {
		return ""
	}
	return r.sampler.Source()
}

func (r *telemetryRecorder) stop() {
	if r.cancel != nil {
		r.cancel()
		<-r.done
	}
}
