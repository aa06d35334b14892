package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/rs/zerolog"

	"github.com/vlmfleet/vlmfleet/explorer"
	"github.com/vlmfleet/vlmfleet/protocol"
)

type seedRuns []protocol.Run

func (s seedRuns) Runs(context.Context) ([]protocol.Run, error) { return s, nil }

// The page served by the explorer shows the first rows of its default view
// from the rows API before the whole dataset has arrived, and the explorer
// then shows the same rows first, in the same order.
func TestServedPageShowsFirstRowsBeforeTheData(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "testdata", "seed_runs.json"))
	if err != nil {
		t.Fatal(err)
	}
	var runs seedRuns
	if err := json.Unmarshal(raw, &runs); err != nil {
		t.Fatal(err)
	}
	ex := explorer.NewHandler(runs, zerolog.New(io.Discard))
	release := make(chan struct{})
	mux := http.NewServeMux()
	// The whole dataset waits until the test has seen the first rows.
	mux.HandleFunc("GET /api/explorer/data", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		ex.ServeHTTP(w, r)
	})
	mux.Handle("/", ex)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})

	var want explorer.RowsResponse
	resp, err := http.Get(srv.URL + explorer.PathRows + "?limit=50")
	if err != nil {
		t.Fatal(err)
	}
	err = json.NewDecoder(resp.Body).Decode(&want)
	resp.Body.Close()
	if err != nil || len(want.Rows) == 0 {
		t.Fatalf("the rows API: %d rows, %v", len(want.Rows), err)
	}

	ctx := newTab(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL)); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`!!window.vlmfleetFirstRows`, chromedp.WithPollingTimeout(15*time.Second))); err != nil {
		t.Fatalf("no first rows while the dataset was held back: %v", err)
	}
	ids := func() []string {
		return eval[[]string](t, ctx, `[...document.querySelectorAll('#tbody tr.row')].map((tr) => tr.dataset.id)`)
	}
	first := ids()
	if len(first) != len(want.Rows) {
		t.Fatalf("%d first rows, want the rows API's %d", len(first), len(want.Rows))
	}
	for i, r := range want.Rows {
		if first[i] != r.ID {
			t.Fatalf("first row %d is %s, want %s (%s)", i, first[i], r.ID, r.Model)
		}
	}
	if eval[bool](t, ctx, `document.documentElement.dataset.ready === 'true'`) {
		t.Fatal("the explorer started without its data")
	}
	cells := fmt.Sprintf(`[...document.querySelectorAll('#tbody tr.row')].slice(0, %d).map((tr) => [...tr.children].slice(1).map((td) => td.textContent).join(' | '))`, len(first))
	texts := eval[[]string](t, ctx, cells)

	close(release)
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.documentElement.dataset.ready === 'true'`, chromedp.WithPollingTimeout(15*time.Second))); err != nil {
		t.Fatalf("the explorer did not start once the data came: %v", err)
	}
	after := ids()
	if len(after) < len(first) {
		t.Fatalf("the explorer shows %d rows, fewer than the %d first rows", len(after), len(first))
	}
	for i := range first {
		if after[i] != first[i] {
			t.Fatalf("row %d: the explorer shows %s where the first rows had %s", i, after[i], first[i])
		}
	}
	// The rows' cells read the same from the rows API as from the dataset.
	got := eval[[]string](t, ctx, cells)
	for i := range texts {
		if i >= len(got) || got[i] != texts[i] {
			t.Errorf("row %d: %q from the rows API, %q from the dataset", i, texts[i], got[min(i, len(got)-1)])
		}
	}
}
