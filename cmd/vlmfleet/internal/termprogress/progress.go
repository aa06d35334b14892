package termprogress

import (
	"fmt"
	"strings"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// Progress draws one job's progress message, labelled who (an agent and
// its deployment, or nothing for a single bench); id keeps jobs apart.
// Each combination gets its own line, written for good when its last
// request is in, so the terminal keeps the history of a run. Every command
// that shows measurement progress (demo, bench, sweep --wait) draws it
// here, from the same message the agent publishes, so they read alike.
func (b *Bars) Progress(id, who string, p protocol.Progress) {
	prefix := who
	if prefix != "" {
		prefix += " "
	}
	switch p.Phase {
	case protocol.PhaseDone:
		// Set without a total: "done 1/1" would count something that is not
		// a request.
		b.Set(id, prefix+"done", 0, 0, p.Message)
		b.Finish(id)
		return
	case protocol.PhaseEngineStart:
		// The agent's message names the engine ("starting vLLM").
		msg := p.Message
		if msg == "" {
			msg = "starting the engine"
		}
		b.Set(id, strings.TrimSpace(prefix+msg), 0, 0, "")
		return
	}
	// The engine is up: its line gives way to the combinations'.
	b.Finish(id)
	id += "/" + p.Combo.String()
	label := prefix + p.Combo.String()
	if p.ComboN > 0 {
		label = fmt.Sprintf("%s[%d/%d] %s", prefix, p.ComboIdx+1, p.ComboN, p.Combo)
	}
	if p.Phase == protocol.PhaseWarmup {
		b.Set(id, label+" warm-up", 0, 0, "")
		return
	}
	b.Set(id, label, p.Done+p.Failed, p.Total, progressSuffix(p))
	if p.Total > 0 && p.Done+p.Failed >= p.Total {
		b.Finish(id)
	}
}

func progressSuffix(p protocol.Progress) string {
	s := "TTFT -"
	if p.MeanTTFT > 0 {
		s = "TTFT " + formatSeconds(p.MeanTTFT)
	}
	if p.Failed > 0 {
		s += fmt.Sprintf(", %d failed", p.Failed)
	}
	if p.Simulated {
		s += " SIMULATED"
	}
	return s
}

// formatSeconds prints a duration in seconds with two decimals and its unit.
func formatSeconds(s float64) string { return fmt.Sprintf("%.2f s", s) }
