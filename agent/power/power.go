// Package power reads and sets the power a device measures in: a Jetson's
// nvpmodel mode, an NVIDIA GPU's power limit, a simulated device's mode.
// The agent itself stays unprivileged: switching goes through the narrow
// privileged path its local configuration names (docs/operations.md).
package power

import (
	"context"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// Switcher reads and sets one device's power.
type Switcher interface {
	// Control is what the device has (modes, a limit's range), what it
	// runs in now and whether this agent may switch it: the hello's.
	Control(ctx context.Context) (protocol.PowerControl, error)
	// Current is what the device runs in now.
	Current(ctx context.Context) (protocol.PowerSetting, error)
	// Set switches the device to s and returns once the new clocks hold.
	// A mode the device does not list, a limit outside the GPU's range,
	// a switch that fails or asks for a reboot is an error that says
	// which; the device is then in the mode it was in, or Set says not.
	Set(ctx context.Context, s protocol.PowerSetting) error
}
