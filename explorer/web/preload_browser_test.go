package web_test

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/vlmfleet/vlmfleet/explorer/web"
)

// The served page asks for its data at once, from its <head>, and its
// module takes that answer: the server is asked once per load.
func TestServedPagePreloadsItsDataOnce(t *testing.T) {
	data := mustJSON(t, bigDataset(300))
	var asked atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/explorer/data", func(w http.ResponseWriter, _ *http.Request) {
		asked.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Write(data)
	})
	mux.Handle("/", web.Handler())
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	ctx := newTab(t)
	open(t, ctx, srv.URL)
	if n := asked.Load(); n != 1 {
		t.Errorf("one load asked for the data %d times, want once (the preload taken by the page)", n)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll('link[rel="preload"][href="/api/explorer/data"]').length`); n != 1 {
		t.Errorf("the page has %d preloads of its data, want 1", n)
	}
	if c := eval[string](t, ctx, `document.querySelector('#count').textContent`); c != "300 of 300 rows" {
		t.Errorf("count %q, want 300 of 300 rows", c)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll('tr.row').length`); n != 50 {
		t.Errorf("%d rows in the table at the first render, want the first 50", n)
	}
}
