package main

import (
	"flag"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/vlmfleet/vlmfleet/explorer"
)

// costFlags are the explorer page's cost inputs as flags: the same
// example defaults (vlmfleet ships no prices) and the same checks.
type costFlags struct{ c explorer.Cost }

func addCostFlags(fs *flag.FlagSet) *costFlags {
	f := &costFlags{c: explorer.DefaultCost}
	fs.Var(priceFlag{&f.c}, "price", "device price, for the cost per camera per month (an example: give yours): a `PRICE` for every device, "+
		"or DEVICE=PRICE pairs separated by commas for each device's own (\"Jetson Orin NX=599,RTX PRO 6000=8500\"); may be repeated")
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

// priceFlag is --price: a number is the price of every device; a list of
// DEVICE=PRICE pairs prices those devices, the others keeping the one
// price. Each use adds to what the earlier ones set.
type priceFlag struct{ c *explorer.Cost }

func (p priceFlag) String() string {
	if p.c == nil {
		return ""
	}
	parts := []string{strconv.FormatFloat(p.c.Price, 'g', -1, 64)}
	for _, d := range slices.Sorted(maps.Keys(p.c.DevicePrices)) {
		parts = append(parts, d+"="+strconv.FormatFloat(p.c.DevicePrices[d], 'g', -1, 64))
	}
	return strings.Join(parts, ",")
}

func (p priceFlag) Set(s string) error {
	if f, err := strconv.ParseFloat(strings.TrimSpace(s), 64); err == nil {
		p.c.Price = f
		return nil
	}
	for _, pair := range strings.Split(s, ",") {
		i := strings.LastIndex(pair, "=")
		if i < 0 {
			return fmt.Errorf("%q: want a number (every device's price) or DEVICE=PRICE pairs separated by commas, e.g. \"Jetson Orin NX=599,RTX PRO 6000=8500\"", pair)
		}
		device := strings.TrimSpace(pair[:i])
		f, err := strconv.ParseFloat(strings.TrimSpace(pair[i+1:]), 64)
		if device == "" || err != nil {
			return fmt.Errorf("%q: want DEVICE=PRICE, a device's name and a number", pair)
		}
		if p.c.DevicePrices == nil {
			p.c.DevicePrices = map[string]float64{}
		}
		p.c.DevicePrices[device] = f
	}
	return nil
}

// checkDevices has the device prices name the devices as the rows do
// (any case), so that a typo is an error rather than a price never used.
func checkDevices(c *explorer.Cost, ds explorer.Dataset) error {
	var names []string
	for _, r := range ds.Rows {
		if !slices.Contains(names, r.Device) {
			names = append(names, r.Device)
		}
	}
	slices.Sort(names)
	prices := map[string]float64{}
	for given, price := range c.DevicePrices {
		i := slices.IndexFunc(names, func(n string) bool { return strings.EqualFold(n, given) })
		if i < 0 {
			return fmt.Errorf("--price %q: no row's device is named so; the devices are %s", given, strings.Join(names, ", "))
		}
		prices[names[i]] = price
	}
	if len(prices) > 0 {
		c.DevicePrices = prices
	}
	return nil
}
