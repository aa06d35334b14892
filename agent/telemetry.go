package agent

import (
	"context"
	"sync"
	"time"

	"github.com/vlmfleet/vlmfleet/agent/telemetry"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// telemetryRecorder samples the hardware while a job runs, streams each
// sample live, and cuts the samples into one window per measured combination.
type telemetryRecorder struct {
	a       *Agent
	jobID   string
	sampler *telemetry.Sampler

	mu      sync.Mutex
	samples []protocol.TelemetrySample
	from    int

	cancel context.CancelFunc
	done   chan struct{}
}

func newTelemetryRecorder(a *Agent, jobID string, simulated bool, speedup float64, load func() float64) *telemetryRecorder {
	r := &telemetryRecorder{a: a, jobID: jobID}
	source := a.cfg.Telemetry.Source
	if source == "off" {
		return r
	}
	if simulated && source == "auto" {
		source = "simulated"
	}
	interval := time.Duration(a.cfg.Telemetry.Interval)
	if source == "simulated" && speedup > 1 {
		// A simulated device running N times faster is sampled N times as
		// often, so each combination gets as many samples as on the device.
		interval = max(time.Duration(float64(interval)/speedup), 20*time.Millisecond)
	}
	s, err := telemetry.New(telemetry.Options{
		Source:    source,
		Interval:  interval,
		SysRoot:   a.cfg.SysRoot,
		Path:      a.opt.Getenv("PATH"),
		SimLoad:   load,
		SimDevice: a.device.Name,
		Log:       a.log,
	})
	if err != nil {
		a.log.Warn().Err(err).Str("source", source).Msg("telemetry unavailable; measuring without it")
		return r
	}
	r.sampler = s
	return r
}

func (r *telemetryRecorder) start(ctx context.Context) {
	if r.sampler == nil {
		return
	}
	ctx, r.cancel = context.WithCancel(ctx)
	r.done = make(chan struct{})
	go func() {
		defer close(r.done)
		err := r.sampler.Run(ctx, func(s protocol.TelemetrySample) {
			r.mu.Lock()
			r.samples = append(r.samples, s)
			r.mu.Unlock()
			r.a.publishLive(protocol.KindTelemetry, protocol.TelemetryTick{
				Schema: protocol.SchemaVersion, AgentID: r.a.cfg.ID, JobID: r.jobID, Sample: s,
			})
		})
		if err != nil && ctx.Err() == nil {
			r.a.log.Warn().Err(err).Msg("telemetry stopped")
		}
	}()
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

func (r *telemetryRecorder) stop() {
	if r.cancel != nil {
		r.cancel()
		<-r.done
	}
}
