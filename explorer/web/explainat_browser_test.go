package web_test

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/vlmfleet/vlmfleet/explorer"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// The expanded row's explanation judges as the view does, in Go's words
// (explorer.ExplainAt): by p90 it gives the p90 Max Cameras the table
// shows, never the mean's.
func TestExplanationJudgesAsTheView(t *testing.T) {
	ds := buyerDataset(t)
	searched := rowIDs(ds)["searched"]
	ctx := newTab(t)
	open(t, ctx, serve(t, mustJSON(t, ds)))
	click(t, ctx, `#tbody tr[data-id="`+searched.ID+`"] .toggle`)
	for _, view := range []struct {
		button string
		q      explorer.Query
	}{
		{"p90", explorer.Query{Size: "720p", Images: 1, Cameras: 1, Target: 3, Statistic: protocol.StatisticP90}},
		{"p95", explorer.Query{Size: "720p", Images: 1, Cameras: 1, Target: 3, Statistic: protocol.StatisticP95}},
		{"mean", explorer.DefaultQuery()},
	} {
		click(t, ctx, `#stat-buttons button[data-value="`+view.button+`"]`)
		got := eval[[]string](t, ctx, `[...document.querySelectorAll('#tbody tr.detail .d-explain p:not(.hint)')].map(e => e.textContent)`)
		if want := explorer.ExplainAt(searched, view.q); !slices.Equal(got, want) {
			t.Errorf("by %s the explanation is\n%q\nwant Go's\n%q", view.button, got, want)
		}
	}
}

// explanationAt (logic.js) writes what explorer.ExplainAt writes at 720p
// and one image, for every row, statistic and a range of targets.
func TestExplanationAtInStepWithGo(t *testing.T) {
	type view struct {
		Row       explorer.Row `json:"row"`
		Statistic string       `json:"statistic"`
		Target    float64      `json:"target"`
	}
	var views []view
	var want [][]string
	for _, r := range append(buyerDataset(t).Rows, testDataset().Rows...) {
		for _, stat := range []string{"mean", "p90", "p95"} {
			for _, target := range []float64{0.3, 1, 3, 100} {
				views = append(views, view{r, stat, target})
				want = append(want, explorer.ExplainAt(r, explorer.Query{Size: "720p", Images: 1, Cameras: 1, Target: target, Statistic: stat}))
			}
		}
	}
	ctx := newTab(t)
	open(t, ctx, serve(t, mustJSON(t, testDataset())))
	got := eval[[][]string](t, ctx, `import('/static/logic.js').then(m => (`+string(mustJSON(t, views))+`).map(v =>
		m.explanationAt(v.row, v.statistic, v.target)))`)
	if len(got) != len(want) {
		t.Fatalf("%d explanations from JS, %d from Go", len(got), len(want))
	}
	for i := range want {
		if !slices.Equal(got[i], want[i]) {
			t.Errorf("%s by %s at %g s:\nJS %q\nGo %q", views[i].Row.Model, views[i].Statistic, views[i].Target, got[i], want[i])
		}
	}
}

// By a percentile the page's first sentences say that their response
// times are averages, as Go's do; by the mean they stay as stored.
func TestExplanationAtSaysItsResponseTimesAreAverages(t *testing.T) {
	ds := buyerDataset(t)
	searched := rowIDs(ds)["searched"]
	stored := searched.Explanation
	single := strings.Replace(stored[0], "image after 0.16 s,", "image after 0.16 s on average,", 1)
	const heavy = "With 5 images per camera at 720p, the answer starts after 0.64 s on average. With one 2K image, after 0.56 s on average."
	if single == stored[0] {
		t.Fatalf("the searched row's first sentence no longer gives 0.16 s: %q", stored[0])
	}
	ctx := newTab(t)
	open(t, ctx, serve(t, mustJSON(t, ds)))
	for _, c := range []struct {
		stat   string
		target float64
		want   []string
	}{
		{"p90", 3, []string{single, heavy}},
		{"p95", 0.3, []string{single, heavy}},
		{"mean", 1, stored[:2]},
	} {
		got := eval[[]string](t, ctx, `import('/static/logic.js').then(m => m.explanationAt(`+string(mustJSON(t, searched))+`, '`+c.stat+`', `+strconv.FormatFloat(c.target, 'g', -1, 64)+`))`)
		if len(got) < 2 || !slices.Equal(got[:2], c.want) {
			t.Errorf("by %s at %g s:\n got %q\nwant %q first", c.stat, c.target, got, c.want)
		}
	}
}
