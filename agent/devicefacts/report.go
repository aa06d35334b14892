package devicefacts

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// WriteReport prints what is known of a device and, when there is one, a
// telemetry sample from source; sampleErr says why there is none.
func WriteReport(w io.Writer, f protocol.DeviceFacts, s *protocol.TelemetrySample, source, sampleErr string) {
	fmt.Fprintf(w, "Device:   %s (%s)\n", f.Name, f.Kind)
	if j := f.Jetson; j != nil {
		fmt.Fprintf(w, "Jetson:   %s\n", j.Model)
		fmt.Fprintf(w, "          L4T %s, JetPack %s, power mode %s, clocks pinned %s, %d MB\n",
			orDash(j.L4T), orDash(j.JetPack), orDash(j.PowerMode), yesNo(j.ClocksPinned), j.MemoryMB)
	}
	for _, g := range f.GPUs {
		fmt.Fprintf(w, "GPU %d:    %s (%s)\n", g.Index, g.Name, GPUDisplayName(g.Name, g.MaxPowerLimitW))
		fmt.Fprintf(w, "          driver %s, CUDA %s, %d MiB, power limit %.0f W (max %.0f W), compute %s\n",
			orDash(g.Driver), orDash(g.CUDA), g.MemoryMB, g.DefaultPowerLimitW, g.MaxPowerLimitW, orDash(g.ComputeCap))
	}
	h := f.Host
	fmt.Fprintf(w, "Host:     %s: %s, %d cores, %d MB RAM, %s, kernel %s, %s\n",
		orDash(h.Hostname), orDash(h.CPUModel), h.Cores, h.MemoryMB, orDash(h.OS), orDash(h.Kernel), h.Arch)
	for _, warn := range f.Warnings {
		fmt.Fprintf(w, "Warning:  %s\n", warn)
	}
	if s == nil {
		fmt.Fprintf(w, "Sample:   none from %s: %s\n", orDash(source), sampleErr)
		return
	}
	fmt.Fprintf(w, "Sample:   %s at %s\n", source, s.Time.Format(time.RFC3339Nano))
	fmt.Fprintf(w, "          GPU %s %%, power %s W, temp %s C, memory %s/%s MB, CPU %s %%\n",
		num(s.GPUUtil, 1), num(s.PowerW, 2), num(s.TempC, 1), num(s.MemUsedMB, 0), num(s.MemTotalMB, 0), num(s.CPUUtil, 1))
	fmt.Fprintf(w, "          agent CPU %s %%, RSS %s MB, throttle %s\n",
		num(s.AgentCPU, 1), num(s.AgentRSSMB, 1), orDash(strings.Join(s.Throttle, ",")))
	if len(s.Rails) > 0 {
		names := make([]string, 0, len(s.Rails))
		for n := range s.Rails {
			names = append(names, n)
		}
		sort.Strings(names)
		parts := make([]string, len(names))
		for i, n := range names {
			parts[i] = fmt.Sprintf("%s %.3f W", n, s.Rails[n])
		}
		fmt.Fprintf(w, "Rails:    %s\n", strings.Join(parts, ", "))
	}
}

func num(p *float64, decimals int) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprintf("%.*f", decimals, *p)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func yesNo(b *bool) string {
	switch {
	case b == nil:
		return "unknown"
	case *b:
		return "yes"
	}
	return "no"
}
