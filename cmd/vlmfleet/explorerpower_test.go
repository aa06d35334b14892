package main

import (
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/vlmfleet/vlmfleet/explorer"
	"github.com/vlmfleet/vlmfleet/harness/labtest"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// powerRunFiles writes one model on one Jetson measured in 15W, with
// 18.4 W and 9.6 J per answer at its Max Cameras (2), and in MAXN without
// power samples.
func powerRunFiles(t *testing.T) string {
	t.Helper()
	low := labtest.ResultDoc("low", "Qwen3-VL-4B-Instruct")
	low.Config.PowerMode = "15W"
	low.Combinations[1].Energy = &protocol.Energy{Source: protocol.PowerSourceModuleInput, Samples: 8, MeanPowerW: 18.4, WindowSec: 8, JoulesPerAnswer: 9.6}
	maxn := labtest.ResultDoc("maxn", "Qwen3-VL-4B-Instruct")
	maxn.Config.PowerMode = "MAXN"
	return writeJSONFile(t, t.TempDir(), "power.json", []protocol.Run{low, maxn})
}

// The table has the page's power columns when the runs have power
// samples, the cost at the page's example inputs or the flags', and each
// power mode as its own row with the device.
func TestExplorerTablePowerColumns(t *testing.T) {
	file := powerRunFiles(t)
	code, out, errOut := cliRun(t, nil, "explorer", "table", file, "--sort", "device")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(out, "\n")
	if len(lines) < 3 || !strings.Contains(lines[0], "POWER AT MAX W  J PER ANSWER  W PER CAMERA  COST PER CAMERA PER MONTH (USD)") {
		t.Fatalf("head lacks the power columns:\n%s", out)
	}
	low, maxn := fields(lines[1]), fields(lines[2])
	if want := []string{"2+", "PASS", "18.4", "9.6", "9.20", "15.90"}; !strings.Contains(lines[1], "Jetson AGX Orin · 15W") || !suffixIs(low, want) {
		t.Errorf("the 15W row %q, want its device with 15W and ending %q", lines[1], want)
	}
	if want := []string{"2+", "PASS", "n/a", "n/a", "n/a", "n/a"}; !strings.Contains(lines[2], "Jetson AGX Orin · MAXN") || !suffixIs(maxn, want) {
		t.Errorf("the MAXN row %q, want its device with MAXN and ending %q", lines[2], want)
	}
	_, out, _ = cliRun(t, nil, "explorer", "table", file, "--sort", "device", "--price", "720", "--months", "36", "--kwh", "0.5", "--currency", "EUR")
	if !strings.Contains(out, "COST PER CAMERA PER MONTH (EUR)") || !strings.HasSuffix(strings.Split(out, "\n")[1], "13.36") {
		t.Errorf("at 720 over 36 months and 0.5 a kWh, want 13.36 EUR:\n%s", out)
	}
	// Runs without power samples: no power columns, as on the page.
	_, out, _ = cliRun(t, nil, "explorer", "table", seedRuns)
	if strings.Contains(out, "POWER AT MAX") {
		t.Errorf("the seed's table, which has no power samples, shows power columns:\n%s", out)
	}
	for _, tc := range []struct{ flag, value, want string }{
		{"--months", "0", "--months 0: want 0.1 to 1200 months (three days to a century)"},
		{"--months", "1e-310", "--months 1e-310: want 0.1 to 1200 months"},
		{"--price", "-1", "--price -1: want a device price from 0 up to 1e12"},
		{"--kwh", "-0.2", "--kwh -0.2: want a price of a kWh from 0 up to 1e6"},
		{"--kwh", "1e307", "--kwh 1e+307: want a price of a kWh from 0 up to 1e6"},
		{"--currency", "", `--currency "": want a name of 1 to 12 characters`},
	} {
		if code, _, errOut := cliRun(t, nil, "explorer", "table", file, tc.flag, tc.value); code != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%s %q: exit %d: %s; want 2 and %q", tc.flag, tc.value, code, errOut, tc.want)
		}
	}
}

func fields(line string) []string { return strings.Fields(line) }

func suffixIs(got, want []string) bool {
	return len(got) >= len(want) && strings.Join(got[len(got)-len(want):], " ") == strings.Join(want, " ")
}

// --json carries the cost where the table prints its cost column: the
// inputs it is read at and each row's cost at them, none for a row
// without power samples; runs without power samples have neither.
func TestExplorerTableJSONCarriesTheCost(t *testing.T) {
	file := powerRunFiles(t)
	for _, c := range []struct {
		args []string
		want explorer.Cost
		cell string
	}{
		{nil, explorer.DefaultCost, "15.90"},
		{[]string{"--price", "720", "--months", "36", "--kwh", "0.5", "--currency", "EUR"}, explorer.Cost{Price: 720, Months: 36, KWh: 0.5, Currency: "EUR"}, "13.36"},
	} {
		args := append([]string{"explorer", "table", file, "--sort", "device", "--json"}, c.args...)
		code, out, errOut := cliRun(t, nil, args...)
		var res explorer.RowsResponse
		if err := json.Unmarshal([]byte(out), &res); code != 0 || err != nil || len(res.Rows) != 2 {
			t.Fatalf("%q: exit %d, %v: %s%s", c.args, code, err, out, errOut)
		}
		if res.Cost == nil || !reflect.DeepEqual(*res.Cost, c.want) {
			t.Errorf("%q: cost %+v, want %+v", c.args, res.Cost, c.want)
		}
		low, maxn := res.Rows[0], res.Rows[1]
		if low.PowerMode != "15W" || low.CostPerCameraMonth == nil || *low.CostPerCameraMonth != explorer.CostPerCameraMonth(c.want, 18.4, 2) {
			t.Errorf("%q: the 15W row costs %v, want %v", c.args, low.CostPerCameraMonth, explorer.CostPerCameraMonth(c.want, 18.4, 2))
		} else if got := strconv.FormatFloat(*low.CostPerCameraMonth, 'f', 2, 64); got != c.cell {
			t.Errorf("%q: the 15W row costs %s, the table prints %s", c.args, got, c.cell)
		}
		if maxn.PowerMode != "MAXN" || maxn.CostPerCameraMonth != nil {
			t.Errorf("%q: the MAXN row, without power samples, costs %v", c.args, maxn.CostPerCameraMonth)
		}
	}
	_, out, _ := cliRun(t, nil, "explorer", "table", seedRuns, "--json", "--price", "720")
	if strings.Contains(out, "cost") {
		t.Errorf("the seed's rows, which have no power samples (no cost column), carry a cost:\n%s", out)
	}
}

// --price prices each device on its own where a lab has more than one
// kind ("Jetson AGX Orin=599,RTX PRO 6000=8500", or the flag repeated);
// a device no row has, or a pair that is not one, is refused by name.
func TestExplorerTablePricesEachDevice(t *testing.T) {
	jetson := labtest.ResultDoc("jetson", "Qwen3-VL-4B-Instruct")
	jetson.Combinations[1].Energy = &protocol.Energy{Source: protocol.PowerSourceModuleInput, Samples: 8, MeanPowerW: 18.4, WindowSec: 8, JoulesPerAnswer: 9.6}
	rtx := labtest.ResultDoc("rtx", "Qwen3-VL-4B-Instruct")
	rtx.Config.Device, rtx.Device.Name = "RTX PRO 6000", "RTX PRO 6000"
	rtx.Combinations[1].Energy = &protocol.Energy{Source: protocol.PowerSourceGPU, Samples: 8, MeanPowerW: 300, WindowSec: 8, JoulesPerAnswer: 150}
	file := writeJSONFile(t, t.TempDir(), "two.json", []protocol.Run{jetson, rtx})
	for _, args := range [][]string{
		{"--price", "Jetson AGX Orin=599,RTX PRO 6000=8500"},
		{"--price", "jetson agx orin=599", "--price", "RTX PRO 6000=8500"},
	} {
		code, out, errOut := cliRun(t, nil, append([]string{"explorer", "table", file, "--sort", "device", "--json"}, args...)...)
		var res explorer.RowsResponse
		if err := json.Unmarshal([]byte(out), &res); code != 0 || err != nil || len(res.Rows) != 2 {
			t.Fatalf("%q: exit %d, %v: %s%s", args, code, err, out, errOut)
		}
		for _, r := range res.Rows {
			price, w := 599.0, 18.4
			if r.Device == "RTX PRO 6000" {
				price, w = 8500, 300
			}
			c := explorer.DefaultCost
			c.Price = price
			if want := explorer.CostPerCameraMonth(c, w, r.MaxCameras); r.CostPerCameraMonth == nil || *r.CostPerCameraMonth != want {
				t.Errorf("%q: %s costs %v, want %v at %g", args, r.Device, r.CostPerCameraMonth, want, price)
			}
		}
	}
	_, out, _ := cliRun(t, nil, "explorer", "table", file, "--price", "800", "--price", "RTX PRO 6000=8500")
	if !strings.Contains(out, "prices: RTX PRO 6000 8500, any other device 800 USD") {
		t.Errorf("the table does not say which price each device is read at:\n%s", out)
	}
	for _, tc := range []struct{ value, want string }{
		{"Jetson Nano=99", `--price "Jetson Nano": no row's device is named so; the devices are Jetson AGX Orin, RTX PRO 6000`},
		{"RTX PRO 6000", `"RTX PRO 6000": want a number (every device's price) or DEVICE=PRICE pairs`},
		{"RTX PRO 6000=lots", `"RTX PRO 6000=lots": want DEVICE=PRICE, a device's name and a number`},
		{"RTX PRO 6000=-5", `--price RTX PRO 6000=-5: want a device price from 0 up to 1e12`},
	} {
		if code, _, errOut := cliRun(t, nil, "explorer", "table", file, "--price", tc.value); code != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("--price %q: exit %d: %s; want 2 and %q", tc.value, code, errOut, tc.want)
		}
	}
}
