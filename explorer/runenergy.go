package explorer

import (
	"fmt"
	"io"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// powerCovers says what a power source's watts cover, so that a GPU's
// draw is never read as the whole machine's.
func powerCovers(source string) string {
	switch source {
	case protocol.PowerSourceModuleInput:
		return "the Jetson module's input rail"
	case protocol.PowerSourceGPU:
		return "the GPUs alone, not the host"
	case protocol.PowerSourceSimulated:
		return "the simulator's model of the device"
	}
	return source
}

// writeRunEnergy prints each combination's mean power and joules per
// answer, and the idle power they are counted above. A combination
// without power samples says so: zero watts would be a reading.
func writeRunEnergy(w io.Writer, run *protocol.Run) {
	var source string
	for _, c := range run.Combinations {
		if c.Energy != nil {
			source = c.Energy.Source
			break
		}
	}
	if source == "" && run.IdlePower == nil {
		fmt.Fprintln(w, "\nEnergy: no power samples")
		return
	}
	if source == "" {
		source = run.IdlePower.Source
	}
	fmt.Fprintf(w, "\nEnergy, from %s:\n", powerCovers(source))
	if p := run.IdlePower; p != nil {
		fmt.Fprintf(w, "  idle %.2f W over %.1f s before the first combination\n", p.MeanPowerW, p.WindowSec)
	} else {
		fmt.Fprintln(w, "  idle power: not sampled")
	}
	for _, c := range run.Combinations {
		fmt.Fprintf(w, "  %-6s %4d %4d  ", c.Size, c.Images, c.Cameras)
		if c.FrameIntervalSec > 0 {
			fmt.Fprintf(w, "every %gs  ", c.FrameIntervalSec)
		}
		e := c.Energy
		if e == nil {
			fmt.Fprintln(w, "no power samples")
			continue
		}
		fmt.Fprintf(w, "%7.2f W over %.1f s, %.2f J per answer", e.MeanPowerW, e.WindowSec, e.JoulesPerAnswer)
		if a := e.AboveIdleJoulesPerAnswer; a != nil {
			fmt.Fprintf(w, " (%.2f J above idle)", *a)
		}
		fmt.Fprintln(w)
	}
}
