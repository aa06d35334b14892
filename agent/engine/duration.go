package engine

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Duration is a time.Duration that config files write as "10m" or "90s"
// (a bare number is seconds), in YAML and JSON alike.
type Duration time.Duration

// ParseDuration reads "10m", "1h30m", "90s" or a bare number of seconds.
func ParseDuration(s string) (Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, nil
	}
	if secs, err := strconv.ParseFloat(s, 64); err == nil {
		// NaN fails every comparison, so test for the valid range.
		if !(secs >= 0 && secs <= float64(1<<62)/float64(time.Second)) {
			return 0, fmt.Errorf("duration %q: want a non-negative number of seconds", s)
		}
		return Duration(secs * float64(time.Second)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("duration %q: want a Go duration like \"10m\" or \"90s\"", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("duration %q: must not be negative", s)
	}
	return Duration(d), nil
}

func (d Duration) String() string { return time.Duration(d).String() }

// UnmarshalYAML reads a YAML scalar: 10m, "10m", '90s' or 600.
func (d *Duration) UnmarshalYAML(b []byte) error {
	s := strings.TrimSpace(string(b))
	if len(s) >= 2 && (s[0] == '"' || s[0] == '\'') && s[len(s)-1] == s[0] {
		s = s[1 : len(s)-1]
	}
	return d.UnmarshalText([]byte(s))
}

// UnmarshalText reads the same forms as ParseDuration.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := ParseDuration(string(b))
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// MarshalText writes the Go form, "10m0s".
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalJSON accepts a string ("10m") or a number of seconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		return d.UnmarshalText([]byte(s))
	}
	var n json.Number
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("duration: got %s, want a string like \"10m\" or a number of seconds", b)
	}
	return d.UnmarshalText([]byte(n.String()))
}

// MarshalJSON writes the string form.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }
