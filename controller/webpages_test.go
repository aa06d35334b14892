package controller

import (
	"net/http"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/vlmfleet/vlmfleet/explorer"
)

// The pages' shared stylesheet and script are served with their types and
// an ETag the browser revalidates with; every page loads them and keeps no
// copy of the shared code; the explorer at "/" keeps its own /static/.
func TestPagesShareOneStylesheetAndScript(t *testing.T) {
	c := startControllerWith(t, Options{DataDir: t.TempDir(),
		Explorer: func(runs RunSource) http.Handler { return explorer.NewHandler(runs, zerolog.Nop()) }})
	u := c.HTTPURL()
	for path, ctype := range map[string]string{"/lab/lab.css": "text/css; charset=utf-8", "/lab/lab.js": "text/javascript; charset=utf-8"} {
		code, body, h := send(t, http.MethodGet, u+path, "", nil)
		if code != http.StatusOK || h.Get("Content-Type") != ctype || h.Get("X-Content-Type-Options") != "nosniff" || body == "" {
			t.Errorf("GET %s: %d, Content-Type %q, nosniff %q, %d bytes; want 200 %s", path, code, h.Get("Content-Type"), h.Get("X-Content-Type-Options"), len(body), ctype)
		}
		etag := h.Get("ETag")
		if etag == "" || h.Get("Cache-Control") != "no-cache" {
			t.Errorf("GET %s: ETag %q, Cache-Control %q; want a validator and no-cache", path, etag, h.Get("Cache-Control"))
			continue
		}
		if code, body, _ := send(t, http.MethodGet, u+path, "", map[string]string{"If-None-Match": etag}); code != http.StatusNotModified || body != "" {
			t.Errorf("GET %s with If-None-Match %s: %d (%d bytes), want 304", path, etag, code, len(body))
		}
	}
	for _, path := range []string{"/live", "/fleet", "/sweeps", "/sweeps/s-1"} {
		code, body, h := send(t, http.MethodGet, u+path, "", nil)
		if code != http.StatusOK || h.Get("Content-Type") != "text/html; charset=utf-8" {
			t.Errorf("GET %s: %d, Content-Type %q", path, code, h.Get("Content-Type"))
		}
		for _, want := range []string{`<link rel="stylesheet" href="/lab/lab.css">`, `<script src="/lab/lab.js"></script>`} {
			if !strings.Contains(body, want) {
				t.Errorf("GET %s: the page lacks %s", path, want)
			}
		}
		for _, shared := range []string{"function el(", "function deploymentsCell(", "--muted:", "sessionStorage"} {
			if strings.Contains(body, shared) {
				t.Errorf("GET %s: the page has its own copy of %q, which lab.js/lab.css holds", path, shared)
			}
		}
	}
	if code, body, h := send(t, http.MethodGet, u+"/static/app.js", "", nil); code != http.StatusOK || !strings.Contains(h.Get("Content-Type"), "javascript") || body == "" {
		t.Errorf("the explorer's GET /static/app.js: %d, Content-Type %q", code, h.Get("Content-Type"))
	}
}

// Off loopback the shared assets are read as the pages are: with the
// token or the /login cookie, never without.
func TestPageAssetsOffLoopbackNeedTheLoginCookie(t *testing.T) {
	c := startOffLoopback(t, false)
	u := c.HTTPURL()
	code, _, h := send(t, http.MethodGet, u+"/login?token="+c.APIToken(), "", nil)
	if code != http.StatusSeeOther {
		t.Fatalf("login: %d", code)
	}
	jar := map[string]string{"Cookie": strings.Split(h.Get("Set-Cookie"), ";")[0]}
	for _, path := range []string{"/live", "/lab/lab.css", "/lab/lab.js"} {
		if code, body, _ := send(t, http.MethodGet, u+path, "", nil); code != http.StatusUnauthorized {
			t.Errorf("GET %s without a token: %d %s, want 401", path, code, body)
		}
		if code, body, _ := send(t, http.MethodGet, u+path, "", jar); code != http.StatusOK {
			t.Errorf("GET %s with the login cookie: %d %s, want 200", path, code, body)
		}
	}
}
