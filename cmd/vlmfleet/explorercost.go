package main

import (
	"flag"
	"fmt"

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
	fs.StringVar(&f.c.Currency, "currency", f.c.Currency, fmt.Sprintf("the currency's name, 1 to %d characters (USD, EUR, €)", explorer.MaxCurrencyChars))
	return f
}

// cost checks the inputs as the page's fields and the rows API do
// (explorer.Cost.Check); each flag is named as the input it sets.
func (f *costFlags) cost() (explorer.Cost, error) {
	if err := f.c.Check(); err != nil {
		return f.c, fmt.Errorf("--%w", err)
	}
	return f.c, nil
}
