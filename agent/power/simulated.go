package power

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/vlmfleet/vlmfleet/agent/devicefacts"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// Simulated is a simulated Jetson's nvpmodel, in memory: always
// switchable, for --simulate agents (the demo). A simulated GPU host has
// no modes and nothing to switch.
type Simulated struct {
	modes []protocol.PowerMode
	mu    sync.Mutex
	mode  string
}

// NewSimulated starts in the simulated device's default mode.
func NewSimulated(device string) *Simulated {
	modes, mode := devicefacts.SimPowerModes(device)
	return &Simulated{modes: modes, mode: mode}
}

// Control lists the device's modes.
func (s *Simulated) Control(context.Context) (protocol.PowerControl, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.modes) == 0 {
		return protocol.PowerControl{Reason: "a simulated GPU host has no power modes"}, nil
	}
	return protocol.PowerControl{Modes: s.modes, Mode: s.mode, Switchable: true}, nil
}

// Current is the mode in force.
func (s *Simulated) Current(context.Context) (protocol.PowerSetting, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return protocol.PowerSetting{Mode: s.mode}, nil
}

// Set switches at once.
func (s *Simulated) Set(_ context.Context, p protocol.PowerSetting) error {
	pc, _ := s.Control(context.Background())
	if len(s.modes) == 0 || p.Mode == "" || !pc.HasMode(p.Mode) {
		return fmt.Errorf("power %q: this simulated device's modes are %s", p, orNone(pc.ModeNames()))
	}
	s.mu.Lock()
	s.mode = p.Mode
	s.mu.Unlock()
	return nil
}

func orNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
