package protocol

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

func TestPowerSettingValidate(t *testing.T) {
	for _, tc := range []struct {
		s    PowerSetting
		want string
	}{
		{PowerSetting{}, ""},
		{PowerSetting{Mode: "15W"}, ""},
		{PowerSetting{Mode: "MAXN_SUPER"}, ""},
		{PowerSetting{LimitW: 300}, ""},
		{PowerSetting{Mode: "15W", LimitW: 300}, "a mode"},
		{PowerSetting{Mode: "15 W"}, "has ' '"},
		{PowerSetting{Mode: "x;reboot"}, "has ';'"},
		{PowerSetting{Mode: strings.Repeat("M", MaxPowerModeLen+1)}, "at most"},
		{PowerSetting{LimitW: -1}, "above 0"},
		{PowerSetting{LimitW: math.NaN()}, "above 0"},
		{PowerSetting{LimitW: 60000}, "at most"},
	} {
		err := tc.s.Validate("power")
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v: %v, want %q", tc.s, err, tc.want)
		}
	}
}

func TestPowerControlCheckNamesTheModesItHas(t *testing.T) {
	jetson := &PowerControl{Modes: []PowerMode{{ID: 0, Name: "MAXN"}, {ID: 1, Name: "10W"}, {ID: 2, Name: "15W"}}, Mode: "MAXN", Switchable: true}
	if err := jetson.Check(PowerSetting{Mode: "15W"}); err != nil {
		t.Fatal(err)
	}
	err := jetson.Check(PowerSetting{Mode: "25W"})
	if err == nil || !strings.Contains(err.Error(), `"25W"`) || !strings.Contains(err.Error(), "MAXN, 10W, 15W") {
		t.Fatalf("unknown mode: %v", err)
	}
	if err := jetson.Check(PowerSetting{LimitW: 300}); err == nil || !strings.Contains(err.Error(), "power_modes") {
		t.Fatalf("limit on a Jetson: %v", err)
	}
	locked := *jetson
	locked.Switchable, locked.Reason = false, "power.switch is off in /etc/vlmfleet/agent.yaml"
	if err := locked.Check(PowerSetting{Mode: "15W"}); err == nil || !strings.Contains(err.Error(), "power.switch is off") {
		t.Fatalf("locked: %v", err)
	}
	if err := locked.Check(PowerSetting{}); err != nil {
		t.Fatalf("as found needs no switch: %v", err)
	}
	gpu := &PowerControl{LimitW: 600, MinLimitW: 150, MaxLimitW: 600, Switchable: true}
	if err := gpu.Check(PowerSetting{LimitW: 300}); err != nil {
		t.Fatal(err)
	}
	if err := gpu.Check(PowerSetting{LimitW: 100}); err == nil || !strings.Contains(err.Error(), "150-600 W") {
		t.Fatalf("out of range: %v", err)
	}
	var none *PowerControl
	if err := none.Check(PowerSetting{Mode: "15W"}); err == nil {
		t.Fatal("no power control took a mode")
	}
}

func TestPowerSettingString(t *testing.T) {
	for s, want := range map[PowerSetting]string{{Mode: "15W"}: "15W", {LimitW: 300}: "300 W limit", {LimitW: 287.5}: "287.5 W limit", {}: ""} {
		if got := s.String(); got != want {
			t.Errorf("%+v: %q, want %q", s, got, want)
		}
	}
}

func TestJobWithPowerRoundTrips(t *testing.T) {
	j := Job{Schema: SchemaVersion, ID: "sw1-j1", AgentID: "a1", Deployment: "d", Workload: DefaultWorkload(), Power: PowerSetting{Mode: "15W"}}
	b, err := json.Marshal(j)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeJob(b)
	if err != nil {
		t.Fatal(err)
	}
	if got.Power.Mode != "15W" {
		t.Fatalf("power lost: %s", b)
	}
	j.Power = PowerSetting{Mode: "15W;reboot"}
	b, _ = json.Marshal(j)
	if _, err := DecodeJob(b); err == nil || !strings.Contains(err.Error(), "power.mode") {
		t.Fatalf("bad mode decoded: %v", err)
	}
	j.Power = PowerSetting{}
	b, _ = json.Marshal(j)
	if strings.Contains(string(b), `"power"`) {
		t.Fatalf("zero setting written: %s", b)
	}
}
