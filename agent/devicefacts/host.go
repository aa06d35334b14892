package devicefacts

import (
	"context"
	"fmt"
	"runtime"
	"strings"

	"github.com/shirou/gopsutil/v4/cpu"
	"github.com/shirou/gopsutil/v4/host"
	"github.com/shirou/gopsutil/v4/mem"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// hostFacts reads this machine through gopsutil, which reads /proc itself:
// SysRoot does not apply to host facts.
func hostFacts(ctx context.Context) (protocol.HostFacts, []string) {
	var warnings []string
	h := protocol.HostFacts{Arch: runtime.GOARCH}
	if infos, err := cpu.InfoWithContext(ctx); err != nil {
		warnings = append(warnings, fmt.Sprintf("CPU model unknown: %v", err))
	} else if len(infos) > 0 {
		h.CPUModel = strings.TrimSpace(infos[0].ModelName)
	}
	if n, err := cpu.CountsWithContext(ctx, true); err != nil {
		warnings = append(warnings, fmt.Sprintf("CPU count unknown: %v", err))
	} else {
		h.Cores = n
	}
	if vm, err := mem.VirtualMemoryWithContext(ctx); err != nil {
		warnings = append(warnings, fmt.Sprintf("RAM size unknown: %v", err))
	} else {
		h.MemoryMB = int(vm.Total / (1 << 20))
	}
	if hi, err := host.InfoWithContext(ctx); err != nil {
		warnings = append(warnings, fmt.Sprintf("host info unknown: %v", err))
	} else {
		h.Hostname = hi.Hostname
		h.Kernel = hi.KernelVersion
		h.OS = strings.TrimSpace(hi.Platform + " " + hi.PlatformVersion)
		if h.OS == "" {
			h.OS = hi.OS
		}
	}
	return h, warnings
}
