package explorer

import (
	"fmt"
	"strings"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// runMeta describes a run for the expanded row.
func runMeta(r *protocol.Run) RunMeta {
	m := RunMeta{
		ID:            r.ID,
		Date:          runDate(r).UTC(),
		Source:        r.Source,
		Origin:        r.Origin,
		Simulated:     isSimulated(r),
		EngineVersion: r.Engine.Version,
		EngineCommand: r.Engine.Command,
		Platform:      platform(r.Device),
		PowerMode:     firstNonEmpty(runPower(r), powerMode(r.Device)),
		Telemetry:     telemetryLine(r),
		Requests:      requestsLine(r),
		Warnings:      r.Warnings,
	}
	return m
}

// platform is "JetPack 6.2 (L4T 36.4.3)" on a Jetson, "driver 580.65, CUDA 13.0" on a dGPU.
func platform(d protocol.DeviceFacts) string {
	if j := d.Jetson; j != nil {
		switch {
		case j.JetPack != "" && j.L4T != "":
			return "JetPack " + j.JetPack + " (L4T " + j.L4T + ")"
		case j.JetPack != "":
			return "JetPack " + j.JetPack
		case j.L4T != "":
			return "L4T " + j.L4T
		}
	}
	if len(d.GPUs) > 0 {
		var parts []string
		if g := d.GPUs[0]; g.Driver != "" {
			parts = append(parts, "driver "+g.Driver)
		}
		if g := d.GPUs[0]; g.CUDA != "" {
			parts = append(parts, "CUDA "+g.CUDA)
		}
		return strings.Join(parts, ", ")
	}
	return ""
}

// powerMode is the nvpmodel mode on a Jetson and the power limit on a dGPU.
func powerMode(d protocol.DeviceFacts) string {
	if d.Jetson != nil && d.Jetson.PowerMode != "" {
		return d.Jetson.PowerMode
	}
	if len(d.GPUs) > 0 && d.GPUs[0].DefaultPowerLimitW > 0 {
		return trimmed(d.GPUs[0].DefaultPowerLimitW, 0) + " W power limit"
	}
	return ""
}

// telemetryLine summarises the hardware during the default combination (720p,
// one image, one camera); when that has no telemetry, during the one with the
// most cameras that has, since load shows there. The combination is named.
func telemetryLine(r *protocol.Run) string {
	var best *protocol.Combination
	for i := range r.Combinations {
		c := &r.Combinations[i]
		if c.Telemetry == nil || c.Telemetry.Samples == 0 {
			continue
		}
		if c.Size == DefaultSize && c.Images == 1 && c.Cameras == 1 && !c.Paced() {
			best = c
			break
		}
		if best == nil || c.Cameras > best.Cameras || (c.Cameras == best.Cameras && c.Images > best.Images) ||
			(c.Cameras == best.Cameras && c.Images == best.Images && best.Paced() && !c.Paced()) {
			best = c
		}
	}
	if best == nil {
		return ""
	}
	t := best.Telemetry
	var parts []string
	if t.GPUUtilMean != nil {
		parts = append(parts, fmt.Sprintf("GPU %s%% mean", trimmed(*t.GPUUtilMean, 0)))
	}
	if t.PowerMeanW != nil {
		parts = append(parts, fmt.Sprintf("%s W mean", trimmed(*t.PowerMeanW, 1)))
	}
	if t.TempMaxC != nil {
		parts = append(parts, fmt.Sprintf("%s °C max", trimmed(*t.TempMaxC, 0)))
	}
	if t.MemPeakMB != nil {
		parts = append(parts, fmt.Sprintf("%s GB memory peak", trimmed(*t.MemPeakMB/1024, 1)))
	}
	if t.Throttled {
		s := "throttled"
		if len(t.Throttle) > 0 {
			s += " (" + strings.Join(t.Throttle, ", ") + ")"
		}
		parts = append(parts, s)
	}
	if len(parts) == 0 {
		return ""
	}
	line := strings.Join(parts, ", ") + " at " + comboWords(best.ComboKey)
	if t.Source != "" {
		line += ", from " + t.Source
	}
	return line
}

// comboWords: "720p, 1 image, 1 camera", and ", one frame every 5 s" on a
// frame clock.
func comboWords(k protocol.ComboKey) string {
	s := k.Size + ", " + plural(k.Images, "image") + ", " + plural(k.Cameras, "camera")
	if k.Paced() {
		s += ", one frame every " + FormatInterval(k.FrameIntervalSec) + " s"
	}
	return s
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return itoa(n) + " " + word + "s"
}

// requestsLine: "412 completed, 3 failed in 19 combinations; 8 per camera
// level, 5 per multi-image combination, 1 warm-up each, up to 128 tokens".
func requestsLine(r *protocol.Run) string {
	completed, failed := 0, 0
	for i := range r.Combinations {
		completed += r.Combinations[i].Completed
		failed += r.Combinations[i].Failed
	}
	s := fmt.Sprintf("%d completed, %d failed in %s", completed, failed, plural(len(r.Combinations), "combination"))
	w := r.Workload
	var parts []string
	if w.RequestsPerLevel > 0 {
		parts = append(parts, fmt.Sprintf("%d per camera level", w.RequestsPerLevel))
	}
	if w.MultiImageRequests > 0 && len(w.MultiImageSizes) > 0 {
		parts = append(parts, fmt.Sprintf("%d per multi-image combination", w.MultiImageRequests))
	}
	if w.WarmupRequests > 0 {
		parts = append(parts, plural(w.WarmupRequests, "warm-up")+" per camera first")
	}
	if w.MaxTokens > 0 {
		parts = append(parts, fmt.Sprintf("up to %d tokens", w.MaxTokens))
	}
	if len(parts) > 0 {
		s += "; " + strings.Join(parts, ", ")
	}
	return s
}
