package explorer

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxCurrencyChars bounds the currency's name: a code or a sign, not a
// sentence, so that it fits a column head.
const MaxCurrencyChars = 12

// The ranges of the cost inputs: wide enough for any device and tariff in
// any currency, and narrow enough that the cost is a finite number for any
// draw a run records. Within them price / months is at most 1e13 and a
// month of energy at most 730 × 1e3 times the draw in watts; a month of
// 1e-310 (which made price / months infinite) or a kWh price of 1e307 is
// refused, naming the input, instead of costing +Inf.
const (
	MaxCostPrice  = 1e12
	MinCostMonths = 0.1 // about three days
	MaxCostMonths = 1200
	MaxCostKWh    = 1e6
)

// costWant is what each cost input takes, by its Cost field's JSON name,
// worded once for the flags' errors and the rows API's.
var costWant = map[string]string{
	"price":    "a device price from 0 up to 1e12",
	"months":   "0.1 to 1200 months (three days to a century)",
	"kwh":      "a price of a kWh from 0 up to 1e6",
	"currency": "a name of 1 to " + strconv.Itoa(MaxCurrencyChars) + " characters (USD, EUR, €)",
}

// CostInputError is a cost input refused: Input is its Cost field's JSON
// name (price, months, kwh, currency), which the flags share, and Value
// the value as the error writes it. A caller that names the input
// otherwise (the rows API's cur) rewrites it from the parts.
type CostInputError struct {
	Input, Value, Want string
}

func (e *CostInputError) Error() string { return e.Input + " " + e.Value + ": want " + e.Want }

// Check refuses what the page's fields refuse (logic.js parseCostField),
// so that no input gives a cost the page would not: a price, a number of
// months or a kWh price outside its range (NaN and infinities too), a
// currency empty or longer than MaxCurrencyChars.
func (c Cost) Check() error {
	within := func(v, lo, hi float64) bool { return v >= lo && v <= hi } // false for NaN
	refuse := func(input, value string) error {
		return &CostInputError{Input: input, Value: value, Want: costWant[input]}
	}
	g := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	switch {
	case !within(c.Price, 0, MaxCostPrice):
		return refuse("price", g(c.Price))
	case !within(c.Months, MinCostMonths, MaxCostMonths):
		return refuse("months", g(c.Months))
	case !within(c.KWh, 0, MaxCostKWh):
		return refuse("kwh", g(c.KWh))
	case c.Currency == "" || utf8.RuneCountInString(c.Currency) > MaxCurrencyChars:
		return refuse("currency", strconv.Quote(c.Currency))
	}
	for _, device := range slices.Sorted(maps.Keys(c.DevicePrices)) {
		if p := c.DevicePrices[device]; !finite(p) || p < 0 {
			return refuse("price", device+"="+g(p))
		}
	}
	return nil
}

// costParams are the rows API's names for the cost inputs, by Cost field:
// the ones the page keeps them under in its link (logic.js encodeState),
// so that a view's link and its API query read alike.
var costParams = []struct{ param, input string }{
	{"price", "price"}, {"months", "months"}, {"kwh", "kwh"}, {"cur", "currency"},
}

// costParamsText lists costParams for an unknown parameter's error.
const costParamsText = "price, months, kwh, cur (the cost inputs)"

// parseCostParams takes the cost inputs out of v: rest is v without them,
// and cost nil when none was given, else the inputs with those left out at
// DefaultCost, checked.
func parseCostParams(v url.Values) (rest url.Values, cost *Cost, err error) {
	rest = url.Values{}
	for name, vals := range v {
		rest[name] = vals
	}
	c := DefaultCost
	numbers := map[string]*float64{"price": &c.Price, "months": &c.Months, "kwh": &c.KWh}
	for _, p := range costParams {
		vals, given := rest[p.param]
		if !given {
			continue
		}
		delete(rest, p.param)
		cost = &c
		if len(vals) != 1 {
			return nil, nil, fmt.Errorf("%s: given %d times, want once", p.param, len(vals))
		}
		val := strings.TrimSpace(vals[0])
		n, isNumber := numbers[p.input]
		if !isNumber {
			c.Currency = val
			continue
		}
		f, perr := strconv.ParseFloat(val, 64)
		if perr != nil {
			return nil, nil, fmt.Errorf("%s: %q is not a number; want %s", p.param, val, costWant[p.input])
		}
		*n = f
	}
	if cost == nil {
		return rest, nil, nil
	}
	if err := c.Check(); err != nil {
		return nil, nil, costParamError(err)
	}
	return rest, cost, nil
}

// costParamError writes a refused input under its rows API name.
func costParamError(err error) error {
	var ce *CostInputError
	if !errors.As(err, &ce) {
		return err
	}
	for _, p := range costParams {
		if p.input == ce.Input {
			return fmt.Errorf("%s: %s, want %s", p.param, ce.Value, ce.Want)
		}
	}
	return err
}

// costAt is the row's cost per camera per month at c, from its draw at Max
// Cameras; false where that draw is not known, where the page shows no
// cost either, and where the cost is not a finite number (a draw near the
// float's limit, which a run may record): JSON has no +Inf to write.
func (v RowView) costAt(c Cost) (float64, bool) {
	if v.PowerAtMaxW == nil {
		return 0, false
	}
	c.Price = c.PriceFor(v.Device)
	cost := CostPerCameraMonth(c, *v.PowerAtMaxW, v.MaxCameras)
	if math.IsNaN(cost) || math.IsInf(cost, 0) {
		return 0, false
	}
	return cost, true
}

// WithCost is res read at the cost inputs c: c stated in it, and each row
// with a draw at Max Cameras costed at c, as the table's cost cells are.
// res's rows are left as they were.
func (res RowsResponse) WithCost(c Cost) RowsResponse {
	res.Cost = &c
	rows := make([]RowView, len(res.Rows))
	for i, v := range res.Rows {
		if cost, ok := v.costAt(c); ok {
			v.CostPerCameraMonth = &cost
		}
		rows[i] = v
	}
	res.Rows = rows
	return res
}

// PricesText says which price each device's cost is read at: "prices:
// Jetson Orin NX 599, RTX PRO 6000 8500, any other device 1000 USD".
func (c Cost) PricesText() string {
	var parts []string
	for _, d := range slices.Sorted(maps.Keys(c.DevicePrices)) {
		parts = append(parts, d+" "+strconv.FormatFloat(c.DevicePrices[d], 'g', -1, 64))
	}
	parts = append(parts, "any other device "+strconv.FormatFloat(c.Price, 'g', -1, 64))
	return "prices: " + strings.Join(parts, ", ") + " " + c.Currency
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
