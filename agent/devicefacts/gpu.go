package devicefacts

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/vlmfleet/vlmfleet/agent/devicefacts/nvsmi"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// gpuFactFields are what nvidia-smi tells about each GPU; compute_cap is
// missing before driver 510, so the query is probed field by field when the
// whole one fails.
func gpuFactFields() []string {
	return []string{"index", "name", "uuid", "driver_version", "memory.total",
		"power.default_limit", "power.max_limit", "compute_cap"}
}

func gpuFacts(ctx context.Context, opt Options) ([]protocol.GPUFacts, []string) {
	var warnings []string
	bin, err := LookPath(opt.Path, "nvidia-smi")
	if err != nil {
		return nil, []string{fmt.Sprintf("no NVIDIA GPU facts: %v", err)}
	}
	cctx, cancel := context.WithTimeout(ctx, opt.Timeout)
	defer cancel()
	fields, _, err := nvsmi.Probe(cctx, bin, gpuFactFields(), nil)
	if err != nil {
		return nil, []string{fmt.Sprintf("no NVIDIA GPU facts: %v", err)}
	}
	if len(fields) < len(gpuFactFields()) {
		warnings = append(warnings, fmt.Sprintf("nvidia-smi answers only %s", strings.Join(fields, ",")))
	}
	rows, err := nvsmi.Query(cctx, bin, fields)
	if err != nil {
		return nil, []string{fmt.Sprintf("no NVIDIA GPU facts: %v", err)}
	}
	gpus, perr := ParseGPUFacts(fields, rows)
	for _, e := range perr {
		warnings = append(warnings, e.Error())
	}
	_, cuda, err := nvsmi.Banner(cctx, bin)
	if err != nil {
		warnings = append(warnings, fmt.Sprintf("CUDA version unknown: %v", err))
	} else if cuda == "" {
		warnings = append(warnings, "CUDA version unknown: no \"CUDA Version:\" in the nvidia-smi banner")
	}
	for i := range gpus {
		gpus[i].CUDA = cuda
	}
	return gpus, warnings
}

// ParseGPUFacts reads nvidia-smi CSV rows of the given fields. A value that
// does not parse is left out with an error naming GPU and field.
func ParseGPUFacts(fields []string, rows [][]string) ([]protocol.GPUFacts, []error) {
	var gpus []protocol.GPUFacts
	var errs []error
	for r, row := range rows {
		g := protocol.GPUFacts{Index: r}
		for i, f := range fields {
			if i >= len(row) || nvsmi.Unavailable(row[i]) {
				continue
			}
			v := row[i]
			num := func() (float64, bool) {
				x, err := strconv.ParseFloat(v, 64)
				if err != nil {
					errs = append(errs, fmt.Errorf("nvidia-smi GPU row %d field %s: %q is not a number", r, f, v))
					return 0, false
				}
				return x, true
			}
			switch f {
			case "index":
				if x, ok := num(); ok {
					g.Index = int(x)
				}
			case "name":
				g.Name = v
			case "uuid":
				g.UUID = v
			case "driver_version":
				g.Driver = v
			case "memory.total":
				if x, ok := num(); ok {
					g.MemoryMB = int(x)
				}
			case "power.default_limit":
				if x, ok := num(); ok {
					g.DefaultPowerLimitW = x
				}
			case "power.max_limit":
				if x, ok := num(); ok {
					g.MaxPowerLimitW = x
				}
			case "compute_cap":
				g.ComputeCap = v
			}
		}
		gpus = append(gpus, g)
	}
	return gpus, errs
}

// GPUDisplayName turns nvidia-smi's name into the explorer's: "NVIDIA RTX
// PRO 6000 Blackwell Max-Q Workstation Edition" is "RTX PRO 6000 Max-Q".
// When the name does not say which RTX PRO 6000 it is, the maximum power
// limit does: the Workstation Edition goes to 600 W, the Max-Q to 300 W.
func GPUDisplayName(name string, maxPowerW float64) string {
	low := strings.ToLower(name)
	if strings.Contains(low, "rtx pro 6000") {
		switch {
		case strings.Contains(low, "max-q"):
			return "RTX PRO 6000 Max-Q"
		case strings.Contains(low, "server"):
			return "RTX PRO 6000 Server"
		case strings.Contains(low, "workstation"):
			return "RTX PRO 6000"
		case maxPowerW > 0 && maxPowerW <= 350:
			return "RTX PRO 6000 Max-Q"
		default:
			return "RTX PRO 6000"
		}
	}
	if n := strings.TrimSpace(strings.TrimPrefix(name, "NVIDIA ")); n != "" {
		return n
	}
	return "NVIDIA GPU"
}
