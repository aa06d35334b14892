package sweepfile

import (
	"slices"
	"strconv"

	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// maxPowerSettings bounds a sweep's power axis: every setting multiplies
// the sweep's jobs, and no device lists more than a handful of modes.
const maxPowerSettings = 32

// checkPower checks a sweep's power_modes and power_limits_w as
// written: names a mode may have, limits a GPU may take, no duplicates.
// Whether each agent has the mode or the range is the scheduler's to say,
// from the agents' hellos.
func checkPower(modes []string, limits []float64) error {
	if n := len(modes) + len(limits); n > maxPowerSettings {
		field := "power_modes"
		if len(limits) > 0 {
			field = "power_limits_w" // the list written last takes it past
		}
		return api.BadSweepf("%s: %d settings in power_modes and power_limits_w together, at most %d", field, n, maxPowerSettings)
	}
	for i, m := range modes {
		field := "power_modes[" + strconv.Itoa(i) + "]"
		if m == "" {
			// ValidatePowerMode words this as "field is empty", which the
			// YAML decoder could not place at its line.
			return api.BadSweepf("%s: empty; want a mode named in the device's /etc/nvpmodel.conf, e.g. 15W or MAXN", field)
		}
		if err := protocol.ValidatePowerMode(field, m); err != nil {
			return &api.BadSweepError{Err: err}
		}
		if j := slices.Index(modes, m); j < i {
			return api.BadSweepf("%s: %q is listed twice (power_modes[%d] too); each mode is measured once", field, m, j)
		}
	}
	for i, w := range limits {
		field := "power_limits_w[" + strconv.Itoa(i) + "]"
		if err := protocol.ValidatePowerLimit(field, w); err != nil {
			return &api.BadSweepError{Err: err}
		}
		if j := slices.Index(limits, w); j < i {
			return api.BadSweepf("%s: %g W is listed twice (power_limits_w[%d] too); each limit is measured once", field, w, j)
		}
	}
	return nil
}
