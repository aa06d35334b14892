package sweepfile

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/vlmfleet/vlmfleet/controller/api"
)

// A sweep file's power axis decodes as written, and a bad mode or limit
// is refused at its line and column with the field and what is allowed.
func TestDecodeSweepYAMLPowerAxis(t *testing.T) {
	s, err := DecodeYAML([]byte("agents: [orin-1]\npower_modes: [15W, 25W, MAXN]\npower_limits_w: [300, 450.5]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s.PowerModes, []string{"15W", "25W", "MAXN"}) || !slices.Equal(s.PowerLimitsW, []float64{300, 450.5}) {
		t.Errorf("decoded power_modes %q power_limits_w %v", s.PowerModes, s.PowerLimitsW)
	}
	for _, tc := range []struct {
		name, yaml   string
		line, column int
		field, msg   string
	}{
		{"a duplicate mode", "power_modes:\n  - 15W\n  - MAXN\n  - 15W\n", 4, 5, "power_modes[2]",
			`power_modes[2]: "15W" is listed twice (power_modes[0] too); each mode is measured once`},
		{"a mode with a space", "power_modes: [15W, \"fast mode\"]\n", 1, 20, "power_modes[1]",
			`power_modes[1]: "fast mode" has ' '; a mode's name has letters, digits, '_', '-', '.' and '+'`},
		{"an empty mode", "power_modes: [\"\"]\n", 1, 15, "power_modes[0]",
			"power_modes[0]: empty; want a mode named in the device's /etc/nvpmodel.conf, e.g. 15W or MAXN"},
		{"a limit of nothing", "power_limits_w: [300, 0]\n", 1, 23, "power_limits_w[1]",
			"power_limits_w[1]: 0 W; want a power limit above 0 and at most 5000 W"},
		{"a limit in kilowatts typed as watts", "power_limits_w:\n  - 300000\n", 2, 5, "power_limits_w[0]",
			"power_limits_w[0]: 300000 W; want a power limit above 0 and at most 5000 W"},
		{"a duplicate limit", "power_limits_w: [300, 450, 300]\n", 1, 28, "power_limits_w[2]",
			"power_limits_w[2]: 300 W is listed twice (power_limits_w[0] too)"},
		{"a limit that is a word", "power_limits_w: [lots]\n", 1, 18, "power_limits_w[0]", `power_limits_w[0]: the text "lots", want a number`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeYAML([]byte(tc.yaml))
			var in *api.SweepInputError
			if !errors.As(err, &in) {
				t.Fatalf("error %v (%T), want a api.SweepInputError", err, err)
			}
			if in.Line != tc.line || (tc.column != 0 && in.Column != tc.column) || in.Field != tc.field || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("got line %d column %d field %q %q,\nwant line %d column %d field %q and %q", in.Line, in.Column, in.Field, err, tc.line, tc.column, tc.field, tc.msg)
			}
		})
	}
}

// The JSON API refuses what the YAML form refuses, naming the field.
func TestDecodeSweepJSONPowerAxis(t *testing.T) {
	_, err := Decode([]byte(`{"power_modes": ["MAXN", "MAXN"]}`))
	var bad *api.BadSweepError
	if !errors.As(err, &bad) || api.ErrorBody(err)["field"] != "power_modes[1]" {
		t.Fatalf("error %v (%T) body %v, want a api.BadSweepError naming power_modes[1]", err, err, api.ErrorBody(err))
	}
	if _, err := Decode([]byte(`{"power_limits_w": [-5]}`)); err == nil || !strings.Contains(err.Error(), "power_limits_w[0]: -5 W; want a power limit above 0") {
		t.Errorf("a negative limit: %v", err)
	}
	many := `{"power_limits_w": [` + strings.Repeat("1,", maxPowerSettings) + `2]}`
	if _, err := Decode([]byte(many)); err == nil || err.Error() != "power_limits_w: 33 settings in power_modes and power_limits_w together, at most 32" {
		t.Errorf("%d settings: %v", maxPowerSettings+1, err)
	}
}
