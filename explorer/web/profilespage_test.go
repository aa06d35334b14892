package web_test

import (
	"bytes"
	"html"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/vlmfleet/vlmfleet/explorer/web"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// The latency and throughput page is served at /profiles, stating the
// max-throughput rule the measurement follows word for word; its files
// are served, the page itself only at its path.
func TestHandlerServesTheProfilesPage(t *testing.T) {
	srv := httptest.NewServer(web.Handler())
	defer srv.Close()
	res, page := get(t, srv.URL+"/profiles", nil)
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "text/html; charset=utf-8" || res.Header.Get("Content-Security-Policy") == "" {
		t.Fatalf("GET /profiles: %d %q, CSP %q", res.StatusCode, res.Header.Get("Content-Type"), res.Header.Get("Content-Security-Policy"))
	}
	if rule := html.EscapeString(protocol.ProfileAutoRule); !bytes.Contains(page, []byte(rule)) || bytes.Contains(page, []byte("<!--vlmfleet:")) {
		t.Errorf("the page does not state the rule %q, or still holds a marker", rule)
	}
	for _, name := range []string{"profiles.js", "profiles.css"} {
		if res, body := get(t, srv.URL+"/static/"+name, nil); res.StatusCode != http.StatusOK || len(body) == 0 {
			t.Errorf("/static/%s: %d, %d bytes", name, res.StatusCode, len(body))
		}
	}
	if res, _ := get(t, srv.URL+"/static/profiles.html", nil); res.StatusCode != http.StatusNotFound {
		t.Errorf("/static/profiles.html: %d, want 404: the page is served at /profiles", res.StatusCode)
	}
	lab := httptest.NewServer(web.Handler(web.WithLab()))
	defer lab.Close()
	res, page = get(t, lab.URL+"/profiles", nil)
	if res.StatusCode != http.StatusOK || !bytes.Contains(page, []byte(`<html lang="en" data-lab="1">`)) {
		t.Errorf("in a lab: %d, the page not marked as a lab's", res.StatusCode)
	}
}
