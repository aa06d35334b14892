package explorerapi

import (
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Cost is the page's cost inputs: what the device costs, the months it is
// written off over and the price of a kWh, in one currency.
type Cost struct {
	Price    float64 `json:"price"`
	Months   float64 `json:"months"`
	KWh      float64 `json:"kwh"`
	Currency string  `json:"currency"`
	// DevicePrices are prices by device name (a row's device, without its
	// power setting), for the devices that do not cost Price: a Jetson and
	// a GPU host are not one price.
	DevicePrices map[string]float64 `json:"device_prices,omitempty"`
}

// PriceFor is the price of device: its own, else Price.
func (c Cost) PriceFor(device string) float64 {
	if p, ok := c.DevicePrices[device]; ok {
		return p
	}
	return c.Price
}

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

// CostWant is what the cost input named input (a Cost field's JSON name)
// takes, for an error that names the input otherwise.
func CostWant(input string) string { return costWant[input] }

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
