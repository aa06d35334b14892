package web_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/explorer"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// powerDataset has a Jetson row sampled on its module input (Max Cameras 2
// at 3 s, drawing 18.4 W there), a GPU host row (the GPU alone) and a row
// without power samples.
func powerDataset() explorer.Dataset {
	run := func(id, model, device string, energy func(cams int) *protocol.Energy) protocol.Run {
		r := protocol.Run{ID: id, Status: protocol.RunCompleted, Source: protocol.SourceLab,
			Config:     protocol.Configuration{Model: model, ParamsB: 4, Quantization: "Q8_0", Engine: "llama.cpp", Device: device},
			CreatedAt:  time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC),
			FinishedAt: time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)}
		for _, cams := range []int{1, 2, 4} {
			r.Combinations = append(r.Combinations, protocol.Combination{ComboKey: protocol.ComboKey{Size: "720p", Images: 1, Cameras: cams},
				Completed: 8, TTFT: protocol.Stats{N: 8, Mean: 0.8 * float64(cams), P90: 0.9 * float64(cams)},
				TPS: protocol.Stats{N: 8, Mean: 20}, Energy: energy(cams)})
		}
		return r
	}
	module := func(cams int) *protocol.Energy {
		above := 4.0 * float64(cams)
		return &protocol.Energy{Source: protocol.PowerSourceModuleInput, Samples: 40, MeanPowerW: 10 + 4.2*float64(cams),
			WindowSec: 20, JoulesPerAnswer: 9.6, AboveIdleJoulesPerAnswer: &above}
	}
	gpu := func(cams int) *protocol.Energy {
		return &protocol.Energy{Source: protocol.PowerSourceGPU, Samples: 10, MeanPowerW: 200 + 25*float64(cams), WindowSec: 10, JoulesPerAnswer: 31.25}
	}
	return explorer.Aggregate([]protocol.Run{
		run("p", "Power-VL", "Jetson AGX Orin", module),
		run("g", "GPU-VL", "RTX PRO 6000", gpu),
		run("n", "NoPower-VL", "Jetson Orin NX", func(int) *protocol.Energy { return nil }),
	}, time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC))
}

type energyRow struct {
	Model                     string
	Power, J, WPC, Cost, Note string
}

const energyRowsJS = `[...document.querySelectorAll('#tbody tr.row')].map(tr => ({Model: tr.querySelector('.name').textContent,
  Power: tr.querySelector('.c-power').textContent, J: tr.querySelector('.c-jpa').textContent, WPC: tr.querySelector('.c-wpc').textContent,
  Cost: tr.querySelector('.c-cost').textContent, Note: tr.querySelector('.c-power').title}))`

func TestPowerColumnsSortFilterAndSay(t *testing.T) {
	ds := powerDataset()
	ctx := newTab(t)
	open(t, ctx, serve(t, mustJSON(t, ds)))
	rows := map[string]energyRow{}
	for _, r := range eval[[]energyRow](t, ctx, energyRowsJS) {
		rows[r.Model] = r
	}
	// (1000 / 36 + 18.4 W × 730 h × 0.30 / 1000) / 2 cameras = 15.90 at the example inputs.
	if got, want := rows["Power-VL"], (energyRow{"Power-VL", "18.4", "9.6", "9.20", "15.90", ""}); got != want {
		t.Errorf("Power-VL: %+v, want %+v", got, want)
	}
	if got := rows["GPU-VL"]; got.Power != "250.0" || got.Note != "the GPU alone, not the whole host" {
		t.Errorf("GPU-VL: %+v, want 250.0 W said to be the GPU alone", got)
	}
	if got := rows["NoPower-VL"]; got.Power != "n/a" || got.J != "n/a" || got.Cost != "n/a" || got.Note != "no power samples" {
		t.Errorf("NoPower-VL: %+v, want n/a and no power samples, never 0", got)
	}

	for _, key := range []string{"power", "jpa", "wpc", "cost"} {
		click(t, ctx, fmt.Sprintf(`#table th[data-key=%q] button`, key))
		order := eval[[]string](t, ctx, `[...document.querySelectorAll('#tbody tr.row .name')].map(n => n.textContent)`)
		if strings.Join(order, ",") != "Power-VL,GPU-VL,NoPower-VL" {
			t.Errorf("sorted by %s ascending: %v, want the least first and no power last", key, order)
		}
	}

	setInput(t, ctx, "#maxw", "100")
	if got := eval[[]string](t, ctx, `[...document.querySelectorAll('#tbody tr.row .name')].map(n => n.textContent)`); strings.Join(got, ",") != "Power-VL" {
		t.Errorf("power at most 100 W: %v, want [Power-VL] (a row without samples is not within a budget)", got)
	}
	if h := eval[string](t, ctx, `location.hash`); !strings.Contains(h, "maxw=100") {
		t.Errorf("the link %q does not keep the power filter", h)
	}

	click(t, ctx, `#tbody tr.row .toggle`)
	expl := eval[string](t, ctx, `document.querySelector('.d-explain').textContent`)
	if want := "At 2 cameras it draws 18.4 W, 9.6 J per answer (8.0 J above idle)."; !strings.Contains(expl, want) {
		t.Errorf("the explanation %q lacks %q", expl, want)
	}
	setInput(t, ctx, "#target-number", "1")
	// The explanation judges at the view's target: its draw is at 1 s.
	if got := eval[string](t, ctx, `document.querySelector('.d-explain').textContent`); !strings.Contains(got, "At one camera it draws 14.2 W, 9.6 J per answer (4.0 J above idle).") {
		t.Errorf("at a 1 s target the explanation is %q", got)
	}

	// The page's sentence is Go's at every view.
	var want []string
	type view struct {
		Points    []explorer.Point `json:"points"`
		Statistic string           `json:"statistic"`
		Target    float64          `json:"target"`
	}
	var views []view
	for _, r := range append(ds.Rows, testDataset().Rows...) {
		for _, stat := range []string{"mean", "p90"} {
			for _, target := range []float64{0.5, 1, 2, 3, 100} {
				views = append(views, view{r.Points, stat, target})
				want = append(want, explorer.EnergySentence(r.Points, "720p", 1, 0, protocol.Judgement{Statistic: stat, TargetSec: target}))
			}
		}
	}
	got := eval[[]string](t, ctx, `import('/static/logic.js').then(m => (`+string(mustJSON(t, views))+`).map(v =>
		m.energySentence(v.points, '720p', 1, 0, v.statistic, v.target)))`)
	said := 0
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("view %d: JS %q, Go %q", i, got[i], want[i])
		}
		if want[i] != "" {
			said++
		}
	}
	if said < 6 {
		t.Errorf("only %d views have a sentence", said)
	}
}

func TestCostInputsChangeTheCostAndSurviveReload(t *testing.T) {
	ctx := newTab(t)
	url := serve(t, mustJSON(t, powerDataset()))
	open(t, ctx, url)
	cost := func() string {
		return eval[string](t, ctx, `[...document.querySelectorAll('#tbody tr.row')].find(tr => tr.querySelector('.name').textContent === 'Power-VL').querySelector('.c-cost').textContent`)
	}
	if got := eval[[]string](t, ctx, `['price','months','kwh','currency'].map(f => document.querySelector('#cost-' + f).value)`); strings.Join(got, ",") != "1000,36,0.3,USD" {
		t.Errorf("the inputs start at %v, want the example values shown", got)
	}
	setInput(t, ctx, "#cost-price", "2000")
	setInput(t, ctx, "#cost-currency", "EUR")
	// (2000 / 36 + 18.4 × 730 × 0.3 / 1000) / 2 = 29.79
	if got := cost(); got != "29.79" {
		t.Errorf("cost at a price of 2000: %q, want 29.79", got)
	}
	if h := eval[string](t, ctx, `document.querySelector('#cost-head').textContent`); h != "Cost per camera per month (EUR)" {
		t.Errorf("cost header %q", h)
	}

	setInput(t, ctx, "#cost-price", "-5")
	msg := eval[string](t, ctx, `document.querySelector('#cost-error').hidden ? '' : document.querySelector('#cost-error').textContent`)
	if !strings.Contains(msg, "Device price") || !strings.Contains(msg, "keeping 2000") || cost() != "29.79" {
		t.Errorf("a negative price: message %q, cost %q; want the field named and 2000 kept", msg, cost())
	}
	setInput(t, ctx, "#cost-kwh", "abc")
	msg = eval[string](t, ctx, `document.querySelector('#cost-error').textContent`)
	if !strings.Contains(msg, "Price of a kWh") || !strings.Contains(msg, "not a number") || cost() != "29.79" {
		t.Errorf("a kWh price that is not a number: message %q, cost %q", msg, cost())
	}
	// Inputs that would make the cost infinite are out of range, as in the
	// rows API.
	setInput(t, ctx, "#cost-months", "1e-310")
	msg = eval[string](t, ctx, `document.querySelector('#cost-error').textContent`)
	if !strings.Contains(msg, "Written off over (months): 1e-310") || !strings.Contains(msg, "0.1 to 1200 months") || cost() != "29.79" {
		t.Errorf("months of 1e-310: message %q, cost %q; want the range named and 36 kept", msg, cost())
	}

	// The link carries the inputs: a reload reads them back.
	link := eval[string](t, ctx, `location.href`)
	if !strings.Contains(link, "price=2000") || !strings.Contains(link, "cur=EUR") {
		t.Fatalf("the link %q does not keep the cost inputs", link)
	}
	open(t, ctx, url+"/#size=480p")
	open(t, ctx, link)
	if got := cost(); got != "29.79" {
		t.Errorf("after reloading the link: %q, want 29.79", got)
	}
	// So does the browser, for a plain link.
	open(t, ctx, url+"/")
	if got, in := cost(), eval[string](t, ctx, `document.querySelector('#cost-price').value`); got != "29.79" || in != "2000" {
		t.Errorf("a plain link after: cost %q, price %q; want what the browser kept", got, in)
	}
}

// Data in which no run sampled power (the published rows) shows no power,
// energy or cost columns, cost inputs or power filter; data with power
// shows them all.
func TestPowerColumnsOnlyWhereSomeRunHasPower(t *testing.T) {
	seed, err := os.ReadFile(filepath.Join("..", "testdata", "seed_dataset.json"))
	if err != nil {
		t.Fatal(err)
	}
	const shown = `[document.querySelector('#table th[data-key="power"]').offsetParent !== null,
	  !document.getElementById('cost').hidden, document.getElementById('maxw').offsetParent !== null]`
	for _, c := range []struct {
		name string
		data []byte
		want bool
	}{{"published rows", seed, false}, {"rows with power", mustJSON(t, powerDataset()), true}} {
		ctx := newTab(t)
		open(t, ctx, serve(t, c.data))
		for i, got := range eval[[]bool](t, ctx, shown) {
			if got != c.want {
				t.Errorf("%s: part %d of (power column, cost inputs, power filter) shown %t, want %t", c.name, i, got, c.want)
			}
		}
	}
}
