package web_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/vlmfleet/vlmfleet/explorer/web"
)

// The page carries the rows WithTableRows gives in its table body, under an
// ETag of that body, with the same Content-Security-Policy as ever; no
// rows, the plain page.
func TestPageCarriesTheTableRowsItIsGiven(t *testing.T) {
	var rows atomic.Value
	rows.Store([]byte(`<tr class="row"><td>A</td></tr>`))
	srv := httptest.NewServer(web.Handler(web.WithTableRows(func(*http.Request) []byte { return rows.Load().([]byte) })))
	t.Cleanup(srv.Close)
	plain := httptest.NewServer(web.Handler())
	t.Cleanup(plain.Close)

	res, page := get(t, srv.URL+"/", nil)
	want, plainPage := get(t, plain.URL+"/", nil)
	if !strings.Contains(string(page), `<tbody id="tbody"><tr class="row"><td>A</td></tr></tbody>`) {
		t.Fatalf("the page does not carry its rows in the table body:\n%s", page)
	}
	if strings.Replace(string(page), `<tr class="row"><td>A</td></tr>`, "", 1) != string(plainPage) {
		t.Error("the page with rows differs from the plain page elsewhere than in its table body")
	}
	if got := res.Header.Get("Content-Security-Policy"); got == "" || got != want.Header.Get("Content-Security-Policy") {
		t.Errorf("CSP %q with rows, %q without", got, want.Header.Get("Content-Security-Policy"))
	}
	etag := res.Header.Get("ETag")
	if etag == "" || etag == want.Header.Get("ETag") {
		t.Errorf("ETag %q with rows, %q without", etag, want.Header.Get("ETag"))
	}
	if res, _ := get(t, srv.URL+"/index.html", map[string]string{"If-None-Match": etag}); res.StatusCode != 304 {
		t.Errorf("the same rows with their ETag: %d, want 304", res.StatusCode)
	}

	rows.Store([]byte(`<tr class="row"><td>B</td></tr>`))
	res, page = get(t, srv.URL+"/", map[string]string{"If-None-Match": etag})
	if res.StatusCode != 200 || res.Header.Get("ETag") == etag || !strings.Contains(string(page), `<td>B</td>`) || strings.Contains(string(page), `<td>A</td>`) {
		t.Errorf("new rows: %d, ETag %q (was %q)", res.StatusCode, res.Header.Get("ETag"), etag)
	}

	rows.Store([]byte(nil))
	if res, page := get(t, srv.URL+"/", nil); string(page) != string(plainPage) || res.Header.Get("ETag") != want.Header.Get("ETag") {
		t.Error("no rows: the page is not the plain page")
	}
}
