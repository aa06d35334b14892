package explorer

import (
	"bytes"
	"context"
	"encoding/csv"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// poweredRuns: one model on one Jetson measured in 15W and in MAXN (the
// second slower at 720p, as a lower mode would be), and twice with no
// setting recorded.
func poweredRuns() storeRuns {
	ks := keys(3)
	maxn := synthRun("maxn", 1, 16, ks, steady)
	maxn.Config.PowerMode = "MAXN"
	low := synthRun("low", 2, 16, ks, func(k protocol.ComboKey) profile {
		p := steady(k)
		if k.Size == "720p" {
			p.ttft *= 1.5
		}
		return p
	})
	low.Config.PowerMode = "15W"
	plain := synthRun("plain", 3, 16, ks, steady)
	return storeRuns{maxn, low, plain}
}

// The power setting is part of a row: two modes of one model on one
// device are two rows, each with its mode; a run with no setting keeps
// the row (and the id) it had before power was recorded; a Jetson run
// whose configuration names none takes its device facts' mode; a GPU
// limit reads "300 W limit".
func TestPowerSettingMakesItsOwnRow(t *testing.T) {
	runs := poweredRuns()
	facts := synthRun("facts", 4, 4, keys(1), steady)
	facts.Device.Jetson = &protocol.JetsonFacts{PowerMode: "30W"}
	gpu := synthRun("gpu", 5, 4, keys(1), steady)
	gpu.Config.Device, gpu.Config.PowerLimitW = "RTX PRO 6000", 300
	ds := Aggregate(append(runs, facts, gpu), time.Now())
	modes := map[string]string{}
	for _, r := range ds.Rows {
		if _, dup := modes[r.PowerMode]; dup {
			t.Errorf("two rows with power %q", r.PowerMode)
		}
		modes[r.PowerMode] = r.Run.ID
	}
	want := map[string]string{"15W": "low", "MAXN": "maxn", "": "plain", "30W": "facts", "300 W limit": "gpu"}
	if len(modes) != len(want) {
		t.Fatalf("rows by power %v, want %v", modes, want)
	}
	for p, id := range want {
		if modes[p] != id {
			t.Errorf("the %q row shows run %q, want %q", p, modes[p], id)
		}
	}
	for _, r := range ds.Rows {
		if r.PowerMode != "" && !strings.Contains(r.Explanation[0], " on "+r.Device+" ("+r.PowerMode+"), ") {
			t.Errorf("the %s row's explanation does not name its setting: %q", r.PowerMode, r.Explanation[0])
		}
	}
	plain := Aggregate(storeRuns{runs[2]}, time.Now()).Rows[0]
	for _, r := range ds.Rows {
		if r.PowerMode == "" && r.ID != plain.ID {
			t.Errorf("the row without power has id %s, want %s as without the others", r.ID, plain.ID)
		}
		if r.PowerMode != "" && r.ID == plain.ID {
			t.Errorf("the %s row has the id of the row without power", r.PowerMode)
		}
	}
}

// Runs of two power settings are set side by side, their figures kept,
// but neither is called worse or better; the regression mark never sets
// one mode against the other.
func TestComparePowerModesIsNotARegression(t *testing.T) {
	runs := poweredRuns()
	c, err := Compare(&runs[0], &runs[1])
	if err != nil {
		t.Fatal(err)
	}
	if c.NotARegression != "not comparable as a regression: measured in MAXN and 15W" || c.Verdict != VerdictUnknown || c.Worse != 0 || c.Better != 0 {
		t.Fatalf("MAXN against 15W: %q, verdict %s (%d worse, %d better)", c.NotARegression, c.Verdict, c.Worse, c.Better)
	}
	if c.PowerA != "MAXN" || c.PowerB != "15W" || len(c.Combos) != 3 {
		t.Errorf("power %q and %q, %d combinations, want MAXN, 15W and all 3 side by side", c.PowerA, c.PowerB, len(c.Combos))
	}
	for _, cc := range c.Combos {
		m := metricOf(t, cc, "ttft_p50")
		if m.Verdict != "" || cc.Verdict != "" || m.A == 0 || m.B == 0 {
			t.Errorf("%v: TTFT %g → %g judged %q (combination %q), want the figures unjudged", cc.ComboKey, m.A, m.B, m.Verdict, cc.Verdict)
		}
	}
	// Against a run whose setting was not recorded.
	if c, _ := Compare(&runs[2], &runs[1]); c.NotARegression != "not comparable as a regression: measured in an unrecorded power setting and 15W" {
		t.Errorf("unrecorded against 15W: %q", c.NotARegression)
	}
	// The same comparison in one setting is judged: 15W slowed at 720p is
	// worse than MAXN would be, so the test above cannot pass vacuously.
	same := runs[0]
	same.ID, same.Config.PowerMode = "maxn-again", "15W"
	if c, _ := Compare(&same, &runs[1]); c.Verdict != VerdictWorse || c.NotARegression != "" {
		t.Errorf("two 15W runs: verdict %s %q, want worse", c.Verdict, c.NotARegression)
	}
	reg, err := regression(context.Background(), runs, "maxn", "low")
	if err != nil || reg != nil {
		t.Errorf("regression mark of 15W against MAXN: %+v, %v; want none", reg, err)
	}
}

// The compare endpoint answers a comparison of two settings with 200, the
// figures and the sentence.
func TestCompareEndpointPowerModes(t *testing.T) {
	srv := serve(t, poweredRuns())
	var c Comparison
	if st, body := get(t, srv, "GET", PathCompare+"?a=maxn&b=low", &c); st != http.StatusOK {
		t.Fatalf("status %d: %s", st, body)
	}
	if c.NotARegression != "not comparable as a regression: measured in MAXN and 15W" || len(c.Combos) != 3 {
		t.Errorf("comparison %q with %d combinations", c.NotARegression, len(c.Combos))
	}
}

// A run's CSV ends with the power setting it measured in.
func TestRunCSVEndsWithThePowerSetting(t *testing.T) {
	run := poweredRuns()[1]
	var buf bytes.Buffer
	if err := WriteRunCSV(&buf, &run); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&buf).ReadAll()
	if err != nil || len(recs) < 2 {
		t.Fatalf("%v: %q", err, recs)
	}
	for i, rec := range recs {
		want := "15W"
		if i == 0 {
			want = "power_mode"
		}
		// The load's three columns follow it.
		if got := rec[len(rec)-4]; got != want {
			t.Errorf("line %d ends with %q before the load, want %q", i+1, got, want)
		}
	}
}
