package main

import (
	"flag"
	"fmt"
	"math"
	"unicode/utf8"

	"github.com/vlmfleet/vlmfleet/explorer"
)

// costFlags are the explorer page's cost inputs as flags: the same
// example defaults (vlmfleet ships no prices) and the same checks.
type costFlags struct{ c explorer.Cost }

func addCostFlags(fs *flag.FlagSet) *costFlags {
	f := &costFlags{c: explorer.DefaultCost}
	fs.Float64Var(&f.c.Price, "price", f.c.Price, "device price, for the cost per camera per month (an example: give yours)")
	fs.Float64Var(&f.c.Months, "months", f.c.Months, "months the device is written off over")
	fs.Float64Var(&f.c.KWh, "kwh", f.c.KWh, "price of a kWh, in the same currency")
	fs.StringVar(&f.c.Currency, "currency", f.c.Currency, "the currency's name, 1 to 12 characters (USD, EUR, €)")
	return f
}

// cost checks the inputs as the page's fields do (logic.js parseCostField).
func (f *costFlags) cost() (explorer.Cost, error) {
	c := f.c
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	switch {
	case !finite(c.Price) || c.Price < 0:
		return c, fmt.Errorf("--price %g: want a device price of 0 or more", c.Price)
	case !finite(c.Months) || c.Months <= 0:
		return c, fmt.Errorf("--months %g: want more than 0 months", c.Months)
	case !finite(c.KWh) || c.KWh < 0:
		return c, fmt.Errorf("--kwh %g: want a price of a kWh of 0 or more", c.KWh)
	case c.Currency == "" || utf8.RuneCountInString(c.Currency) > 12:
		return c, fmt.Errorf("--currency %q: want a name of 1 to 12 characters (USD, EUR, €)", c.Currency)
	}
	return c, nil
}
