package explorer

import "strings"

// TableOptions are what WriteTableWith adds to the table: the page's power
// columns (power at Max Cameras, J per answer, W per camera, cost per
// camera per month) when Power is set, the cost read at Cost.
type TableOptions struct {
	Power bool
	Cost  Cost
}

// HasPower says whether any row has a level with power samples: the page
// shows its power columns then (app.js), and the table does likewise.
func HasPower(ds Dataset) bool {
	for _, r := range ds.Rows {
		for _, p := range r.Points {
			if p.PowerW != nil {
				return true
			}
		}
	}
	return false
}

// DeviceLabel is the device as a row shows it, with the power setting it
// was measured in ("Jetson Orin NX · 15W"): logic.js deviceLabel.
func DeviceLabel(c RowConfig) string {
	if c.PowerMode == "" {
		return c.Device
	}
	return c.Device + " · " + c.PowerMode
}

// powerHeads are the power columns' heads, tab-ended, as the page names
// them; "" without power.
func (o TableOptions) powerHeads() string {
	if !o.Power {
		return ""
	}
	return "POWER AT MAX W\tJ PER ANSWER\tW PER CAMERA\tCOST PER CAMERA PER MONTH (" + o.Cost.Currency + ")\t"
}

// powerCells are a row's power cells, tab-ended, as the page writes them
// (energyCellsAt); "" without power.
func (o TableOptions) powerCells(v RowView) string {
	if !o.Power {
		return ""
	}
	var b strings.Builder
	for _, c := range energyCellsAt(v, o.Cost) {
		b.WriteString(c.Text)
		b.WriteByte('\t')
	}
	return b.String()
}
