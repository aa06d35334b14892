package explorer

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// costRuns: Power-VL draws 18.4 W at its Max Cameras (2, at 3 s);
// NoPower-VL keeps up as well but has no power samples.
func costRuns() []protocol.Run {
	return []protocol.Run{
		powerRun("p", "Power-VL", moduleEnergy),
		powerRun("n", "NoPower-VL", func(int) *protocol.Energy { return nil }),
	}
}

// rowJSON is the raw object of model's row in a rows answer, so that a
// test can say which fields it has, not only what they decode to.
func rowJSON(t *testing.T, body, model string) map[string]json.RawMessage {
	t.Helper()
	var res struct {
		Rows []map[string]json.RawMessage `json:"rows"`
	}
	if err := json.Unmarshal([]byte(body), &res); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	for _, r := range res.Rows {
		if string(r["model"]) == `"`+model+`"` {
			return r
		}
	}
	t.Fatalf("no %s row in %s", model, body)
	return nil
}

// The cost inputs, named as the page's link names them, give each row with
// a draw at Max Cameras the cost the table's cell is written from, and say
// what they were read at, the inputs left out at their defaults.
func TestHandlerRowsCost(t *testing.T) {
	srv := serve(t, runList{runs: costRuns()})
	for _, c := range []struct {
		query string
		want  Cost
	}{
		{"price=720&months=24&kwh=0.5&cur=EUR", Cost{Price: 720, Months: 24, KWh: 0.5, Currency: "EUR"}},
		{"kwh=0.25", Cost{Price: 1000, Months: 36, KWh: 0.25, Currency: "USD"}},
		{"cur=%E2%82%AC&target=1", Cost{Price: 1000, Months: 36, KWh: 0.3, Currency: "€"}},
	} {
		var res RowsResponse
		code, body := get(t, srv, "GET", PathRows+"?"+c.query, &res)
		if code != http.StatusOK {
			t.Fatalf("?%s: %d %s", c.query, code, body)
		}
		if res.Cost == nil || !reflect.DeepEqual(*res.Cost, c.want) {
			t.Errorf("?%s: cost %+v, want %+v", c.query, res.Cost, c.want)
		}
		stated, _ := json.Marshal(c.want)
		if !strings.Contains(body, `"cost":`+string(stated)) {
			t.Errorf("?%s: the answer does not state every input (%s): %s", c.query, stated, body)
		}
		with := rowsByModel(res)["Power-VL"]
		if with.PowerAtMaxW == nil || with.CostPerCameraMonth == nil {
			t.Fatalf("?%s: Power-VL has power %v, cost %v; want both", c.query, with.PowerAtMaxW, with.CostPerCameraMonth)
		}
		if want := CostPerCameraMonth(c.want, *with.PowerAtMaxW, with.MaxCameras); *with.CostPerCameraMonth != want {
			t.Errorf("?%s: Power-VL costs %v, want %v", c.query, *with.CostPerCameraMonth, want)
		}
		if cell := energyCellsAt(with, c.want)[3].Text; cell != jsToFixed(*with.CostPerCameraMonth, 2) {
			t.Errorf("?%s: the table's cell %q, the answer's %v", c.query, cell, *with.CostPerCameraMonth)
		}
		if _, has := rowJSON(t, body, "NoPower-VL")["cost_per_camera_month"]; has {
			t.Errorf("?%s: a row without power samples has a cost: %s", c.query, body)
		}
	}
	// At 720 over 24 months and 0.5 a kWh, 18.4 W shared by 2 cameras.
	var res RowsResponse
	get(t, srv, "GET", PathRows+"?price=720&months=24&kwh=0.5", &res)
	if got := rowsByModel(res)["Power-VL"].CostPerCameraMonth; got == nil || jsToFixed(*got, 2) != "18.36" {
		t.Errorf("Power-VL at 720, 24 months, 0.5 a kWh: %v, want 18.36", got)
	}
}

// Without a cost input the answer is the table as before: no cost, and
// not a byte different.
func TestHandlerRowsWithoutCostIsUnchanged(t *testing.T) {
	runs := costRuns()
	srv := serve(t, runList{runs: runs})
	for _, query := range []string{"", "?target=1", "?limit=1"} {
		code, body := get(t, srv, "GET", PathRows+query, nil)
		if code != http.StatusOK || strings.Contains(body, "cost") {
			t.Errorf("%q: %d, %s; want 200 and no cost", query, code, body)
		}
	}
	_, body := get(t, srv, "GET", PathRows, nil)
	want, err := encodeJSON(Select(Aggregate(runs, time.Now()), DefaultQuery()))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal([]byte(body), want) {
		t.Errorf("the default answer changed:\n%s\nwant\n%s", body, want)
	}
}

// A cost input the page's field would refuse is refused, naming the
// parameter and what it takes.
func TestHandlerRowsBadCost(t *testing.T) {
	srv := serve(t, runList{runs: costRuns()})
	for query, want := range map[string][]string{
		"price=-1":            {"price: -1", "from 0 up to 1e12"},
		"price=ten":           {`price: "ten" is not a number`, "from 0 up to 1e12"},
		"price=NaN":           {"price: NaN", "from 0 up to 1e12"},
		"price=1e13":          {"price: 1e+13", "from 0 up to 1e12"},
		"price=1e400":         {"price", "not a number"},
		"months=0":            {"months: 0", "0.1 to 1200 months"},
		"months=-3":           {"months: -3", "0.1 to 1200 months"},
		"months=0.09":         {"months: 0.09", "0.1 to 1200 months"},
		"months=1201":         {"months: 1201", "0.1 to 1200 months"},
		"months=":             {`months: "" is not a number`},
		"kwh=-0.2":            {"kwh: -0.2", "price of a kWh from 0 up to 1e6"},
		"kwh=Inf":             {"kwh: +Inf", "from 0 up to 1e6"},
		"cur=":                {`cur: ""`, "1 to 12 characters"},
		"cur=%20":             {`cur: ""`, "1 to 12 characters"},
		"cur=ABCDEFGHIJKLM":   {`cur: "ABCDEFGHIJKLM"`, "1 to 12 characters"},
		"price=1&price=2":     {"price: given 2 times, want once"},
		"cur=EUR&cur=USD":     {"cur: given 2 times, want once"},
		"currency=EUR":        {`unknown parameter "currency"`, "price, months, kwh, cur"},
		"price=5&cameras=0":   {"cameras: 0"},
		"price=-5&limit=1":    {"price: -5"},
		"months=0&kwh=-1":     {"months: 0"},
		"cur=EUR&months=zero": {`months: "zero"`},
	} {
		code, body := get(t, srv, "GET", PathRows+"?"+query, nil)
		var e errorBody
		if err := json.Unmarshal([]byte(body), &e); code != http.StatusBadRequest || err != nil {
			t.Errorf("?%s: %d %s; want 400", query, code, body)
			continue
		}
		if strings.Contains(e.Error, "\n") {
			t.Errorf("?%s: %q is more than one line", query, e.Error)
		}
		for _, w := range want {
			if !strings.Contains(e.Error, w) {
				t.Errorf("?%s: %q does not say %q", query, e.Error, w)
			}
		}
	}
}

// Each set of cost inputs is its own answer: one kept for one set is
// never served for another.
func TestHandlerRowsCostIsPartOfTheCachedAnswer(t *testing.T) {
	srv := serve(t, &genSource{runs: costRuns()})
	costs := map[string]*float64{}
	for _, query := range []string{"price=720", "price=1000", "", "price=720&cur=EUR", "price=720"} {
		var res RowsResponse
		if code, body := get(t, srv, "GET", PathRows+"?"+query, &res); code != http.StatusOK {
			t.Fatalf("?%s: %d %s", query, code, body)
		}
		got := rowsByModel(res)["Power-VL"].CostPerCameraMonth
		switch {
		case query == "" && (got != nil || res.Cost != nil):
			t.Errorf("no cost inputs after some: cost %+v, %v", res.Cost, got)
		case query != "" && (res.Cost == nil || got == nil):
			t.Fatalf("?%s: cost %+v, %v", query, res.Cost, got)
		case strings.Contains(query, "EUR") && res.Cost.Currency != "EUR":
			t.Errorf("?%s: currency %q, an answer kept for USD", query, res.Cost.Currency)
		}
		if prev, seen := costs[query]; seen && query != "" && *prev != *got {
			t.Errorf("?%s: %v, then %v", query, *prev, *got)
		}
		costs[query] = got
	}
	if *costs["price=720"] == *costs["price=1000"] {
		t.Errorf("720 and 1000 give one cost, %v: an answer kept for one price served for the other", *costs["price=720"])
	}
}

// Cost inputs whose cost would not be a finite number are refused, naming
// the parameter, over a run that sampled power: the answer is a 400, never
// a 500, and nothing is logged at error level.
func TestHandlerRowsCostThatOverflowsIsRefused(t *testing.T) {
	var log bytes.Buffer
	srv := httptest.NewServer(NewHandler(runList{runs: costRuns()}, zerolog.New(&log)))
	t.Cleanup(srv.Close)
	for query, want := range map[string]string{
		"size=480p&cameras=1&months=1e-310":     "months: 1e-310, want 0.1 to 1200 months",
		"size=720p&cameras=1&kwh=1e307":         "kwh: 1e+307, want a price of a kWh from 0 up to 1e6",
		"size=720p&price=1e308&months=1e-300":   "price: 1e+308, want a device price from 0 up to 1e12",
		"size=720p&price=1e12&months=0.1&kwh=0": "",
	} {
		code, body := get(t, srv, "GET", PathRows+"?"+query, nil)
		var e errorBody
		switch {
		case want == "" && code != http.StatusOK:
			t.Errorf("?%s: %d %s; want 200", query, code, body)
		case want != "" && (code != http.StatusBadRequest || json.Unmarshal([]byte(body), &e) != nil || !strings.HasPrefix(e.Error, want)):
			t.Errorf("?%s: %d %s; want 400 saying %q", query, code, body, want)
		}
	}
	if strings.Contains(log.String(), `"level":"error"`) {
		t.Errorf("the handler logged at error level:\n%s", log.String())
	}
}

// A draw near the float's limit, which a run may record, costs +Inf at
// any inputs: that row has no cost, the answer is still JSON, and the
// table's cell says no cost, not 0.
func TestRowsCostThatIsNotFiniteIsLeftOut(t *testing.T) {
	huge := powerRun("h", "Huge-VL", func(cams int) *protocol.Energy {
		e := moduleEnergy(cams)
		e.MeanPowerW = 1e306
		return e
	})
	var log bytes.Buffer
	srv := httptest.NewServer(NewHandler(runList{runs: append(costRuns(), huge)}, zerolog.New(&log)))
	t.Cleanup(srv.Close)
	code, body := get(t, srv, "GET", PathRows+"?kwh=0.3", nil)
	if code != http.StatusOK {
		t.Fatalf("%d %s; want 200", code, body)
	}
	if _, has := rowJSON(t, body, "Huge-VL")["cost_per_camera_month"]; has {
		t.Errorf("a cost that is not finite is in the answer: %s", body)
	}
	if _, has := rowJSON(t, body, "Power-VL")["cost_per_camera_month"]; !has {
		t.Errorf("a finite cost is missing: %s", body)
	}
	var res RowsResponse
	if err := json.Unmarshal([]byte(body), &res); err != nil {
		t.Fatal(err)
	}
	if cell := energyCellsAt(rowsByModel(res)["Huge-VL"], DefaultCost)[3].Text; cell != "—" {
		t.Errorf("the table's cost cell of the huge draw: %q, want —", cell)
	}
	if strings.Contains(log.String(), `"level":"error"`) {
		t.Errorf("the handler logged at error level:\n%s", log.String())
	}
}
