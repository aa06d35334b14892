package power

import (
	"context"
	"fmt"
	"sync"

	"github.com/vlmfleet/vlmfleet/agent/devicefacts"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// Simulated is a simulated device's power, in memory: a simulated
// Jetson's nvpmodel modes, or a simulated GPU host's power limit, always
// switchable, for --simulate agents (the demo).
type Simulated struct {
	modes  []protocol.PowerMode
	limits devicefacts.SimGPULimits

	mu     sync.Mutex
	mode   string
	limitW float64
}

// NewSimulated starts in the simulated device's default mode, or at its
// GPU's default limit.
func NewSimulated(device string) *Simulated {
	modes, mode := devicefacts.SimPowerModes(device)
	s := &Simulated{modes: modes, mode: mode}
	if l, ok := devicefacts.SimGPULimitsFor(device); ok && len(modes) == 0 {
		s.limits, s.limitW = l, l.DefaultW
	}
	return s
}

// Control lists the device's modes or its limit's range.
func (s *Simulated) Control(context.Context) (protocol.PowerControl, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case len(s.modes) > 0:
		return protocol.PowerControl{Modes: s.modes, Mode: s.mode, Switchable: true}, nil
	case s.limitW > 0:
		return protocol.PowerControl{LimitW: s.limitW, MinLimitW: s.limits.MinW, MaxLimitW: s.limits.MaxW, Switchable: true}, nil
	}
	return protocol.PowerControl{Reason: "this simulated device has no power modes and no GPU power limit"}, nil
}

// Current is the mode or the limit in force.
func (s *Simulated) Current(context.Context) (protocol.PowerSetting, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.modes) > 0 {
		return protocol.PowerSetting{Mode: s.mode}, nil
	}
	return protocol.PowerSetting{LimitW: s.limitW}, nil
}

// Set switches at once.
func (s *Simulated) Set(ctx context.Context, p protocol.PowerSetting) error {
	pc, _ := s.Control(ctx)
	if err := pc.Check(p); err != nil || p.IsZero() {
		if err == nil {
			err = fmt.Errorf("no mode or limit given")
		}
		return fmt.Errorf("power %q on this simulated device: %w", p, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if p.Mode != "" {
		s.mode = p.Mode
	} else {
		s.limitW = p.LimitW
	}
	return nil
}
