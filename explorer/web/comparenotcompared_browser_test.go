package web_test

import (
	"net/http/httptest"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/rs/zerolog"

	"github.com/vlmfleet/vlmfleet/explorer"
)

// A figure with too few requests on one side says so in words, with each
// side's count and what comparing needs, as `results diff` does.
func TestComparePageSaysWhyAFigureIsNotCompared(t *testing.T) {
	before := comparedRun("before", 1, 0.25)
	after := comparedRun("after", 2, 0.40)
	c := &after.Combinations[1]
	c.Requests, c.Completed = c.Requests[:1], 1
	srv := httptest.NewServer(explorer.NewHandler(compareStore{before, after}, zerolog.Nop()))
	t.Cleanup(srv.Close)
	ctx := newTab(t)
	do(t, ctx, chromedp.Navigate(srv.URL+"/compare?a=before&b=after"))
	waitCompare(t, ctx)
	got := eval[string](t, ctx, `document.querySelector('tr[data-combo="1080p/1/1"] td[data-metric="ttft_p50"]').textContent`)
	want := explorer.NotComparedText(explorer.MetricChange{Metric: "ttft_p50", NA: 16, NB: 1})
	if got != want || want != "not compared: 16 requests in A, 1 in B; each side needs at least 3" {
		t.Errorf("the cell says %q, want %q", got, want)
	}
}
