package telemetry

import "github.com/vlmfleet/vlmfleet/protocol"

// Summarize condenses the samples of one combination: mean and max GPU
// utilisation and power, hottest temperature, peak memory, and whether any
// sample was throttled (and why). A value no sample reported stays nil.
func Summarize(samples []protocol.TelemetrySample, source string) *protocol.TelemetrySummary {
	sum := &protocol.TelemetrySummary{Samples: len(samples), Source: source}
	var util, power []float64
	reasons := map[string]bool{}
	for _, s := range samples {
		if s.GPUUtil != nil {
			util = append(util, *s.GPUUtil)
		}
		if s.PowerW != nil {
			power = append(power, *s.PowerW)
		}
		sum.TempMaxC = maxPtr(sum.TempMaxC, s.TempC)
		sum.MemPeakMB = maxPtr(sum.MemPeakMB, s.MemUsedMB)
		for _, r := range s.Throttle {
			if IsThrottling(r) {
				reasons[r] = true
			}
		}
	}
	sum.GPUUtilMean, sum.GPUUtilMax = meanMax(util)
	sum.PowerMeanW, sum.PowerMaxW = meanMax(power)
	sum.Throttle = sortedKeys(reasons)
	sum.Throttled = len(sum.Throttle) > 0
	return sum
}

func meanMax(xs []float64) (*float64, *float64) {
	if len(xs) == 0 {
		return nil, nil
	}
	m, mx := mean(xs), xs[0]
	for _, x := range xs {
		mx = max(mx, x)
	}
	return &m, &mx
}

func maxPtr(acc, v *float64) *float64 {
	if v == nil || acc != nil && *acc >= *v {
		return acc
	}
	x := *v
	return &x
}
