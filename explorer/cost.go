package explorer

import (
	"errors"
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"

	"github.com/vlmfleet/vlmfleet/controller/explorerapi"
)

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
			return nil, nil, fmt.Errorf("%s: %q is not a number; want %s", p.param, val, explorerapi.CostWant(p.input))
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
func costAt(v RowView, c Cost) (float64, bool) {
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
func WithCost(res RowsResponse, c Cost) RowsResponse {
	res.Cost = &c
	rows := make([]RowView, len(res.Rows))
	for i, v := range res.Rows {
		if cost, ok := costAt(v, c); ok {
			v.CostPerCameraMonth = &cost
		}
		rows[i] = v
	}
	res.Rows = rows
	return res
}
