package measure

import (
	"cmp"
	"context"
	"errors"
	"time"

	"github.com/vlmfleet/vlmfleet/agent/engine"
	"github.com/vlmfleet/vlmfleet/agent/loadgen"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// measureProfile measures the workload's profile (loadgen.MeasureProfile)
// with the engine's forced-length switches. Each level is completed as it
// is measured (telemetry, the device's time scale) and handed on with its
// length and resolution's others once the max-throughput point is marked,
// so that the mark is in every copy of it.
func (m *measurement) measureProfile(mctx context.Context, ep engine.Endpoint, tel *telemetryRecorder) ([]protocol.Combination, error) {
	w := m.clock.workload(m.run.Workload)
	pics, ok := m.spec.Images.(loadgen.ProfilePictures)
	if !ok && w.Profile.ImagesPerRequest > 0 {
		return nil, errors.New("measuring a profile: the picture set cannot draw pictures of any size")
	}
	spec := loadgen.ProfileSpec{
		Workload:       *w.Profile,
		Prompt:         cmp.Or(w.Prompt, protocol.DefaultPrompt),
		RequestTimeout: time.Duration(max(w.RequestTimeoutSec, 0) * float64(time.Second)),
		ForcedLength:   engine.RequestSwitchesFor(m.run.Engine, m.run.Config.Engine).ForcedLength,
		Warn:           m.warn,
	}
	h := m.loadgenHooks(mctx, tel)
	h.ComboDone = func(_ int, c *protocol.Combination) error { return m.measured(mctx, tel, c) }
	h.SeriesDone = func(levels []protocol.Combination) error {
		for i := range levels {
			if err := m.keep(&levels[i]); err != nil {
				return err
			}
		}
		return nil
	}
	return loadgen.MeasureProfile(mctx, m.target(ep), spec, pics, h)
}

// profileIdentity records what a profile line was measured on: the GPU
// (the device's first; a simulated device's own name, which is how the
// published tables spell it; the device itself where it lists none: a
// Jetson), how many served the model, and TP (0 is 1). The GPUs that
// served it are the TP it was split over: a host's other GPUs did not.
func profileIdentity(r *protocol.Run) {
	c := &r.Config
	c.TP = max(c.TP, 1)
	c.GPU, c.GPUCount = r.Device.Name, c.TP
	if gpus := r.Device.GPUs; len(gpus) > 0 && !r.Simulated {
		c.GPU = gpus[0].Name
	}
}
