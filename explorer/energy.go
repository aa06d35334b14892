package explorer

import (
	"github.com/vlmfleet/vlmfleet/protocol"
)

// pointEnergy copies what c drew onto p. A combination without power
// samples leaves p's energy nil, read as "no power samples", never 0; so
// does J per answer where no answer completed (the protocol's 0 there is
// not a figure).
func pointEnergy(p *Point, c *protocol.Combination) {
	e := c.Energy
	if e == nil || e.Samples < 1 {
		return
	}
	w := e.MeanPowerW
	p.PowerW, p.PowerSource = &w, e.Source
	if c.Completed > 0 {
		j := e.JoulesPerAnswer
		p.JoulesPerAnswer = &j
		if a := e.AboveIdleJoulesPerAnswer; a != nil {
			v := *a
			p.AboveIdleJoulesPerAnswer = &v
		}
	}
}

// EnergyAtMax is a row's draw at its Max Cameras: the level an operator
// would run, so the one whose power and energy decide the budget.
type EnergyAtMax struct {
	Cameras         int
	PowerW          float64
	JoulesPerAnswer *float64
	AboveIdle       *float64
	// WattsPerCamera is PowerW / Cameras.
	WattsPerCamera float64
	Source         string
}

// EnergyAt reads the power at Max Cameras (max, as MaxCamerasJudged gives
// it) at size, images and interval. false where no level kept up or the
// level has no power samples.
func EnergyAt(points []Point, size string, images int, interval float64, max int) (EnergyAtMax, bool) {
	if max < 1 {
		return EnergyAtMax{}, false
	}
	p, ok := FindPointAt(points, size, images, max, interval)
	if !ok || p.PowerW == nil {
		return EnergyAtMax{}, false
	}
	return EnergyAtMax{Cameras: max, PowerW: *p.PowerW, JoulesPerAnswer: p.JoulesPerAnswer, AboveIdle: p.AboveIdleJoulesPerAnswer,
		WattsPerCamera: *p.PowerW / float64(max), Source: p.PowerSource}, true
}

// EnergySentence says the draw at Max Cameras under j in the seed's style:
// "At 2 cameras it draws 18.4 W, 9.6 J per answer." The page's logic.js
// energySentence writes the same; "" where the draw is not known (no
// level kept up, no power samples, a statistic the row cannot be judged
// by).
func EnergySentence(points []Point, size string, images int, interval float64, j protocol.Judgement) string {
	if !Judgeable(points, size, images, interval, j) {
		return ""
	}
	max, _ := MaxCamerasJudged(points, size, images, interval, j)
	e, ok := EnergyAt(points, size, images, interval, max)
	if !ok {
		return ""
	}
	cams := itoa(max) + " cameras"
	if max == 1 {
		cams = "one camera"
	}
	s := "At " + cams + " it draws " + jsToFixed(e.PowerW, 1) + " W"
	if e.Source == protocol.PowerSourceGPU {
		// nvidia-smi reads the GPU's draw: the host around it is not in it.
		s += " (the GPU alone)"
	}
	if e.JoulesPerAnswer != nil {
		s += ", " + jsToFixed(*e.JoulesPerAnswer, 1) + " J per answer"
		if e.AboveIdle != nil {
			s += " (" + jsToFixed(*e.AboveIdle, 1) + " J above idle)"
		}
	}
	return s + "."
}

// DefaultCost is logic.js COST_DEFAULTS: example inputs the page shows for
// the user to replace (vlmfleet ships no prices); the served rows are
// written at them.
var DefaultCost = Cost{Price: 1000, Months: 36, KWh: 0.3, Currency: "USD"}

// HoursPerMonth is 365 days × 24 h / 12.
const HoursPerMonth = 730

// CostPerCameraMonth is logic.js costPerCameraMonth: (price / months + W ×
// 730 h × kWh price / 1000) / cameras, the order of operations kept so
// that both give the same float.
func CostPerCameraMonth(c Cost, powerW float64, cameras int) float64 {
	return (c.Price/c.Months + powerW*HoursPerMonth*c.KWh/1000) / float64(cameras)
}
