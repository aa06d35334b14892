package power

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/vlmfleet/vlmfleet/protocol"
)

func TestParseConfReadsAJetPackConf(t *testing.T) {
	data, err := os.ReadFile("testdata/nvpmodel_orin_nx.conf")
	if err != nil {
		t.Fatal(err)
	}
	c, err := ParseConf("nvpmodel.conf", data)
	if err != nil {
		t.Fatal(err)
	}
	want := []protocol.PowerMode{{ID: 0, Name: "MAXN"}, {ID: 1, Name: "10W", GPUMaxFreqHz: 408000000},
		{ID: 2, Name: "15W", GPUMaxFreqHz: 612000000}, {ID: 3, Name: "25W", GPUMaxFreqHz: 918000000}}
	if !reflect.DeepEqual(c.Modes, want) {
		t.Errorf("modes %+v, want %+v", c.Modes, want)
	}
	if c.Default != 2 {
		t.Errorf("default %d, want 2", c.Default)
	}
	if c.GPUMaxFreqFile != "/sys/devices/platform/bus@0/17000000.gpu/devfreq/17000000.gpu/max_freq" {
		t.Errorf("GPU max_freq file %q", c.GPUMaxFreqFile)
	}
	if m, ok := c.Mode("15W"); !ok || m.ID != 2 {
		t.Errorf("Mode(15W) = %+v, %v", m, ok)
	}
}

func TestParseConfErrorsNameTheLine(t *testing.T) {
	cases := map[string]struct{ conf, want string }{
		"before a block":   {"# c\nGPU MAX_FREQ 1\n", `f.conf:2: "GPU MAX_FREQ 1" before the first`},
		"unclosed header":  {"< POWER_MODEL ID=0 NAME=MAXN\n", "f.conf:1: \"< POWER_MODEL ID=0 NAME=MAXN\": a block header ends with '>'"},
		"no id":            {"< POWER_MODEL NAME=MAXN >\n", `f.conf:1: POWER_MODEL ID="": want a number`},
		"bad name":         {"< POWER_MODEL ID=0 NAME=a;b >\n", `f.conf:1: POWER_MODEL NAME: "a;b" has ';'`},
		"duplicate id":     {"< POWER_MODEL ID=0 NAME=A >\n< POWER_MODEL ID=0 NAME=B >\n", "f.conf:2: POWER_MODEL ID=0 again (first on line 1)"},
		"duplicate name":   {"< POWER_MODEL ID=0 NAME=A >\n\n< POWER_MODEL ID=1 NAME=A >\n", "f.conf:3: POWER_MODEL NAME=A again (first on line 1)"},
		"bad cap":          {"< POWER_MODEL ID=0 NAME=A >\nGPU MAX_FREQ fast\n", `f.conf:2: GPU MAX_FREQ "fast": want Hz or -1`},
		"bad default":      {"< POWER_MODEL ID=0 NAME=A >\n< PM_CONFIG DEFAULT=x >\n", `f.conf:2: PM_CONFIG DEFAULT="x"`},
		"unknown default":  {"< POWER_MODEL ID=0 NAME=A >\n< PM_CONFIG DEFAULT=4 >\n", "f.conf: PM_CONFIG DEFAULT=4 names no POWER_MODEL (ids 0)"},
		"no modes":         {"# nothing\n< PARAM TYPE=FILE NAME=X >\n", "f.conf: no \"< POWER_MODEL"},
		"relative devfreq": {"< PARAM TYPE=CLOCK NAME=GPU >\nMAX_FREQ sys/max_freq\n", `f.conf:2: GPU clock MAX_FREQ "sys/max_freq": want an absolute path`},
		"bad attribute":    {"< POWER_MODEL ID=0 NAME >\n", `f.conf:1: "NAME" in POWER_MODEL's header: want KEY=VALUE`},
	}
	for name, tc := range cases {
		_, err := ParseConf("f.conf", []byte(tc.conf))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", name, err, tc.want)
		}
	}
}

func FuzzParseConf(f *testing.F) {
	data, err := os.ReadFile("testdata/nvpmodel_orin_nx.conf")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add([]byte("< POWER_MODEL ID=0 NAME=MAXN >\nGPU MAX_FREQ -1\n< PM_CONFIG DEFAULT=0 >\n"))
	f.Add([]byte("<POWER_MODEL ID=1 NAME=15W>\n# x\n"))
	f.Add([]byte("< >\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseConf("fuzz.conf", data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.conf") {
				t.Fatalf("error without the file's name: %v", err)
			}
			return
		}
		pc := protocol.PowerControl{Modes: c.Modes}
		seen := map[string]bool{}
		for i, m := range c.Modes {
			if err := protocol.ValidatePowerMode("mode", m.Name); err != nil || seen[m.Name] || m.GPUMaxFreqHz < 0 || m.ID < 0 {
				t.Fatalf("mode %d %+v accepted: %v", i, m, err)
			}
			seen[m.Name] = true
			if !pc.HasMode(m.Name) {
				t.Fatalf("mode %q not found", m.Name)
			}
		}
		if len(c.Modes) == 0 {
			t.Fatal("no modes and no error")
		}
	})
}
