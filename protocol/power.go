package protocol

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// PowerSetting is the power a job asks its device to run in: a Jetson's
// nvpmodel mode by the name /etc/nvpmodel.conf gives it ("15W", "MAXN"),
// or an NVIDIA GPU's power limit in watts (nvidia-smi -pl). The zero
// setting measures the device as found.
type PowerSetting struct {
	Mode   string  `json:"mode,omitempty"`
	LimitW float64 `json:"limit_w,omitempty"`
}

// MaxPowerModeLen bounds a power mode's name; nvpmodel.conf's names are
// a few characters ("MAXN_SUPER", "15W").
const MaxPowerModeLen = 64

// MaxPowerLimitW bounds a GPU power limit any setting may name: above
// every board NVIDIA sells, so that a typo in kilowatts is refused early.
const MaxPowerLimitW = 5000

// IsZero says that the setting leaves the device as found.
func (p PowerSetting) IsZero() bool { return p.Mode == "" && p.LimitW == 0 }

// String is how the setting is shown: "15W", "300 W limit", "" as found.
func (p PowerSetting) String() string {
	switch {
	case p.Mode != "":
		return p.Mode
	case p.LimitW > 0:
		return strconv.FormatFloat(p.LimitW, 'f', -1, 64) + " W limit"
	}
	return ""
}

// Validate checks the setting; field names it in the error ("power",
// "power_modes[1]").
func (p PowerSetting) Validate(field string) error {
	if p.Mode != "" && p.LimitW != 0 {
		return fmt.Errorf("%s: a mode (%q) and a power limit (%g W) at once; a Jetson takes a mode, a GPU host a limit", field, p.Mode, p.LimitW)
	}
	if p.Mode != "" {
		if err := ValidatePowerMode(field+".mode", p.Mode); err != nil {
			return err
		}
	}
	if p.LimitW != 0 {
		if err := ValidatePowerLimit(field+".limit_w", p.LimitW); err != nil {
			return err
		}
	}
	return nil
}

// ValidatePowerMode checks a mode's name as a sweep or a job writes it:
// letters, digits, '_', '-', '.' and '+', at most MaxPowerModeLen bytes.
// Whether the device has the mode is the device's to say.
func ValidatePowerMode(field, name string) error {
	if name == "" {
		return fmt.Errorf("%s is empty; want a mode named in the device's /etc/nvpmodel.conf, e.g. 15W or MAXN", field)
	}
	if len(name) > MaxPowerModeLen {
		return fmt.Errorf("%s: %d bytes, at most %d", field, len(name), MaxPowerModeLen)
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_-.+", r)) {
			return fmt.Errorf("%s: %q has %q; a mode's name has letters, digits, '_', '-', '.' and '+'", field, name, r)
		}
	}
	return nil
}

// ValidatePowerLimit checks a GPU power limit in watts: finite, above 0,
// at most MaxPowerLimitW. The GPU's own range is the agent's to check.
func ValidatePowerLimit(field string, w float64) error {
	if math.IsNaN(w) || math.IsInf(w, 0) || w <= 0 || w > MaxPowerLimitW {
		return fmt.Errorf("%s: %g W; want a power limit above 0 and at most %d W, within the GPU's range (nvidia-smi -q -d POWER)", field, w, MaxPowerLimitW)
	}
	return nil
}

// PowerMode is one nvpmodel mode a Jetson's /etc/nvpmodel.conf lists.
type PowerMode struct {
	ID   int    `json:"id"`
	Name string `json:"name"`
	// GPUMaxFreqHz is the mode's cap on the GPU clock; 0 when the mode
	// leaves it at the hardware's maximum.
	GPUMaxFreqHz int64 `json:"gpu_max_freq_hz,omitempty"`
}

// PowerControl is what an agent says of its device's power in its hello:
// the modes or the limit range it has, what it runs in now, and whether
// its local configuration lets it switch.
type PowerControl struct {
	// Modes are the Jetson's modes, in /etc/nvpmodel.conf's order.
	Modes []PowerMode `json:"modes,omitempty"`
	// Mode is the Jetson's mode when the agent announced itself.
	Mode string `json:"mode,omitempty"`
	// LimitW, MinLimitW and MaxLimitW are the GPU power limit now and the
	// range the GPU allows, watts (the lowest over the agent's GPUs).
	LimitW    float64 `json:"limit_w,omitempty"`
	MinLimitW float64 `json:"min_limit_w,omitempty"`
	MaxLimitW float64 `json:"max_limit_w,omitempty"`
	// Switchable says that the agent's configuration lets it switch; a
	// sweep that sets a mode or a limit is refused for an agent that may
	// not, with Reason.
	Switchable bool   `json:"switchable"`
	Reason     string `json:"reason,omitempty"`
}

// ModeNames lists the modes' names, in order.
func (p *PowerControl) ModeNames() []string {
	var out []string
	for _, m := range p.Modes {
		out = append(out, m.Name)
	}
	return out
}

// HasMode says whether the device lists the mode (names compare exactly,
// as nvpmodel's do).
func (p *PowerControl) HasMode(name string) bool {
	for _, m := range p.Modes {
		if m.Name == name {
			return true
		}
	}
	return false
}

// Check says why the device cannot run in s, or nil: a mode it does not
// list, a limit outside its range, an agent that may not switch.
func (p *PowerControl) Check(s PowerSetting) error {
	if s.IsZero() {
		return nil
	}
	if p == nil {
		return fmt.Errorf("it reports no power control (no nvpmodel modes, no GPU power limit)")
	}
	if s.Mode != "" {
		if len(p.Modes) == 0 {
			return fmt.Errorf("it has no nvpmodel modes (a GPU host takes power_limits_w)")
		}
		if !p.HasMode(s.Mode) {
			return fmt.Errorf("it has no power mode %q; its modes: %s", s.Mode, strings.Join(p.ModeNames(), ", "))
		}
	}
	if s.LimitW != 0 {
		if p.MaxLimitW == 0 {
			return fmt.Errorf("it has no GPU power limit to set (a Jetson takes power_modes)")
		}
		if s.LimitW < p.MinLimitW || s.LimitW > p.MaxLimitW {
			return fmt.Errorf("power limit %g W is outside its GPU's range %g-%g W", s.LimitW, p.MinLimitW, p.MaxLimitW)
		}
	}
	if !p.Switchable {
		why := p.Reason
		if why == "" {
			why = "its configuration does not allow switching (power.switch)"
		}
		return fmt.Errorf("it may not switch power: %s", why)
	}
	return nil
}

// validate bounds the block of a hello.
func (p *PowerControl) validate(prefix string) error {
	if len(p.Modes) > MaxListLen {
		return fmt.Errorf("%smodes: %d, at most %d", prefix, len(p.Modes), MaxListLen)
	}
	for i, m := range p.Modes {
		if err := ValidatePowerMode(fmt.Sprintf("%smodes[%d].name", prefix, i), m.Name); err != nil {
			return err
		}
		if m.GPUMaxFreqHz < 0 {
			return fmt.Errorf("%smodes[%d].gpu_max_freq_hz: %d, want 0 or more", prefix, i, m.GPUMaxFreqHz)
		}
	}
	if p.Mode != "" {
		if err := ValidatePowerMode(prefix+"mode", p.Mode); err != nil {
			return err
		}
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"limit_w", p.LimitW}, {"min_limit_w", p.MinLimitW}, {"max_limit_w", p.MaxLimitW}} {
		if err := checkFigure(prefix+f.name, f.v); err != nil {
			return err
		}
	}
	return checkLen(prefix+"reason", p.Reason, MaxLineLen)
}

// Power is the power setting the configuration was measured in.
func (c Configuration) Power() PowerSetting {
	return PowerSetting{Mode: c.PowerMode, LimitW: c.PowerLimitW}
}
