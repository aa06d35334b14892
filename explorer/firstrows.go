package explorer

import (
	"bytes"
	"fmt"
	"html/template"
	"math"
	"math/big"
	"strings"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// FirstRowsShown is how many rows the served page carries in its table: as
// many as the page displays at once (app.js PAGE_ROWS).
const FirstRowsShown = 50

// FirstRowsHTML writes the first rows of the page's default view (720p,
// one camera, one image, 3 s) as the <tr> elements the page's table body
// holds before its script runs: the same elements, classes and cell text
// as the explorer's own rows (app.js buildRow and paintRow), so that the
// table reads the same before and after the explorer takes it over.
// Everything in it comes from results sent over the network, so it is
// written through html/template: a model named "<script>" is text.
func FirstRowsHTML(ds Dataset) ([]byte, error) {
	sel := DefaultQuery()
	res := Page{Limit: FirstRowsShown}.Cut(Select(ds, sel))
	cells := make([]firstRowCells, len(res.Rows))
	for i, v := range res.Rows {
		cells[i] = firstRowOf(v)
	}
	var buf bytes.Buffer
	if err := firstRowsTemplate.Execute(&buf, cells); err != nil {
		return nil, fmt.Errorf("writing the page's first rows: %w", err)
	}
	return buf.Bytes(), nil
}

// firstRowCells is one row's text as app.js paints it.
type firstRowCells struct {
	ID, Model                     string
	Simulated                     bool
	Why, Setup                    string
	Params, Quant, Engine, Device string
	DeviceTitle                   string
	RT, TPS, Max, MaxTitle        string
	Result                        string
	RowClass, ResultClass         string
	Energy                        [4]energyCell
	First                         bool
}

func firstRowOf(v RowView) firstRowCells {
	why := ""
	if v.Measured && v.Completed == 0 && v.Failed > 0 {
		why = failureText(v.Failed, v.Error)
	}
	var setup []string
	for _, s := range []string{jsFormatParams(v.ParamsB), v.Quantization, v.Engine, DeviceLabel(v.RowConfig)} {
		if s != "" && s != "—" {
			setup = append(setup, s)
		}
	}
	c := firstRowCells{
		ID: v.ID, Model: v.Model, Simulated: v.Simulated, Why: why,
		Setup:  strings.Join(setup, " · "),
		Params: jsFormatParams(v.ParamsB), Quant: v.Quantization, Engine: v.Engine, Device: DeviceLabel(v.RowConfig),
		RT: "all failed", TPS: jsFormatTPS(v.TPS), Max: "—",
		Result: "—", RowClass: "row nodata", ResultClass: "result result-none",
	}
	if v.PowerMode != "" {
		// app.js's title, word for word.
		c.DeviceTitle = "Measured in the power setting " + v.PowerMode + ": each setting is its own row"
	}
	if why == "" {
		c.RT = jsFormatSeconds(v.TTFT)
	}
	if v.TPSUnmeasured {
		c.TPS = "n/a"
	}
	c.MaxTitle = maxCamerasTitle(v)
	c.Energy = energyCells(v)
	if v.Measured {
		c.Max = v.MaxCamerasLabel
		c.Result, c.RowClass, c.ResultClass = "FAIL", "row fail", "result result-fail"
		if v.Pass {
			c.Result, c.RowClass, c.ResultClass = "PASS", "row pass", "result result-pass"
		}
	}
	return c
}

// firstRowsTemplate is app.js buildRow's element for each row. The first
// row's name carries elementtiming, so that a measurement can read when
// the rows were first painted (the Element Timing API).
var firstRowsTemplate = template.Must(template.New("rows").Parse(`{{range $i, $r := .}}<tr class="{{.RowClass}}" data-id="{{.ID}}">` +
	`<td class="c-model"><button type="button" class="toggle" aria-expanded="false"><span class="chev" aria-hidden="true"></span><span class="name"{{if eq $i 0}} elementtiming="first-row"{{end}}>{{.Model}}</span></button>` +
	`{{if .Simulated}}<span class="badge badge-sim" title="From a simulated run, not a measurement of real hardware">SIMULATED</span>{{end}}` +
	`<span class="why"{{if not .Why}} hidden{{end}}>{{.Why}}</span><span class="setup">{{.Setup}}</span></td>` +
	`<td class="num">{{.Params}}</td><td>{{.Quant}}</td><td>{{.Engine}}</td><td{{if .DeviceTitle}} title="{{.DeviceTitle}}"{{end}}>{{.Device}}</td>` +
	`<td class="num c-rt"{{if .Why}} title="{{.Why}}"{{end}}>{{.RT}}</td><td class="num c-tps">{{.TPS}}</td><td class="num c-max"{{if .MaxTitle}} title="{{.MaxTitle}}"{{end}}>{{.Max}}</td>` +
	`<td class="c-result"><span class="{{.ResultClass}}">{{.Result}}</span></td>` +
	`{{range .Energy}}<td class="num {{.Class}}"{{if .Title}} title="{{.Title}}"{{end}}>{{.Text}}</td>{{end}}</tr>{{end}}`))

// energyCell is one of app.js paintEnergy's cells.
type energyCell struct{ Class, Text, Title string }

// energyCells is app.js paintEnergy at the default view and the cost
// inputs' defaults: "n/a" where a level kept up without power samples,
// "—" where none did.
func energyCells(v RowView) [4]energyCell { return energyCellsAt(v, DefaultCost) }

// energyCellsAt is energyCells at the cost inputs c.
func energyCellsAt(v RowView, c Cost) [4]energyCell {
	out := [4]energyCell{{Class: "c-power"}, {Class: "c-jpa"}, {Class: "c-wpc"}, {Class: "c-cost"}}
	if v.PowerAtMaxW == nil {
		text, title := "—", ""
		if v.Measured && !v.NotJudged && v.MaxCameras > 0 {
			text, title = "n/a", "no power samples"
		}
		for i := range out {
			out[i].Text = text
			if i < 3 {
				out[i].Title = title
			}
		}
		return out
	}
	out[0].Text, out[1].Text, out[2].Text = jsToFixed(*v.PowerAtMaxW, 1), "n/a", jsToFixed(*v.WattsPerCamera, 2)
	if v.JoulesAtMax != nil {
		out[1].Text = jsToFixed(*v.JoulesAtMax, 1)
	}
	out[3].Text = "—"
	if cost, ok := costAt(v, c); ok {
		out[3].Text = jsToFixed(cost, 2)
	}
	if v.PowerSource == protocol.PowerSourceGPU {
		for i := range 3 {
			out[i].Title = "the GPU alone, not the whole host"
		}
	}
	return out
}

// The formats below are logic.js's, character for character; the Go
// formats in format.go are the seed's explanations', which differ ("4 s"
// where the table shows "4.00").

// failureText is logic.js failureText.
func failureText(failed int, reason string) string {
	n := "all " + itoa(failed) + " requests"
	if failed == 1 {
		n = "the one request"
	}
	if reason != "" {
		return n + " failed: " + reason
	}
	return n + " failed"
}

// maxCamerasTitle is logic.js maxCamerasTitle: what makes a Max Cameras a
// search chose exact.
func maxCamerasTitle(v RowView) string {
	load := "; one round per level, as published"
	if v.Sustained {
		load = "; sustained, cameras that keep sending"
	}
	switch {
	case !v.Measured || v.NotJudged || !v.Search:
		return ""
	case v.Exact:
		return "Exact: a search measured " + itoa(v.MaxCameras+1) + " cameras too, which did not keep up" + load
	case v.Plus:
		return "A search measured up to its ceiling and the highest number still kept up" + load
	}
	return "A search measured levels here; the level above this one was not measured at this target" + load
}

// jsFormatSeconds is logic.js formatSeconds: "—" for no figure, else
// RoundSeconds to two decimals.
func jsFormatSeconds(s *float64) string {
	if s == nil || math.IsNaN(*s) || math.IsInf(*s, 0) {
		return "—"
	}
	return jsToFixed(jsRound(*s*100)/100, 2)
}

// jsFormatTPS is logic.js formatTPS.
func jsFormatTPS(t *float64) string {
	if t == nil || math.IsNaN(*t) || math.IsInf(*t, 0) || *t <= 0 {
		return "—"
	}
	return jsToFixed(*t, 1)
}

// jsFormatParams is logic.js formatParams.
func jsFormatParams(b float64) string {
	if !(b > 0) {
		return "—"
	}
	if b >= 10 {
		return jsToFixed(jsRound(b), 0) + "B"
	}
	return jsToFixed(b, 1) + "B"
}

// jsRound is JavaScript's Math.round: halves go up (toward +∞), where Go's
// math.Round takes them away from zero.
func jsRound(x float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return x
	}
	f := math.Floor(x)
	if x-f >= 0.5 {
		return f + 1
	}
	return f
}

// jsToFixed is JavaScript's Number.prototype.toFixed for finite x below
// 1e21: the decimal nearest the exact value of x, a tie taking the larger
// one, where strconv rounds a tie to even (12.25 is "12.3" in JavaScript,
// "12.2" from strconv.FormatFloat).
func jsToFixed(x float64, digits int) string {
	sign := ""
	if x < 0 {
		sign, x = "-", -x
	}
	r := new(big.Rat).SetFloat64(x)
	scale := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(digits)), nil)
	r.Mul(r, new(big.Rat).SetInt(scale))
	// n = floor(x·10^digits + 1/2), in integers: (2·num + den) / (2·den).
	num := new(big.Int).Mul(r.Num(), big.NewInt(2))
	num.Add(num, r.Denom())
	n := num.Div(num, new(big.Int).Mul(r.Denom(), big.NewInt(2)))
	s := n.String()
	if digits == 0 {
		return sign + s
	}
	if len(s) <= digits {
		s = strings.Repeat("0", digits-len(s)+1) + s
	}
	return sign + s[:len(s)-digits] + "." + s[len(s)-digits:]
}
