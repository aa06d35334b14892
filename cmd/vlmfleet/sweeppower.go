package main

import (
	"fmt"
	"strconv"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// parsePowerLimits reads --power-limits: comma-separated watts ("300,450").
// The range each GPU takes is the controller's to check, from its agents.
func parsePowerLimits(v string) ([]float64, error) {
	var out []float64
	for i, s := range protocol.SplitList(v) {
		w, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, fmt.Errorf("--power-limits: item %d, %q, is not a number of watts; want e.g. --power-limits 300,450", i+1, s)
		}
		out = append(out, w)
	}
	return out, nil
}
