package controller

import (
	"crypto/sha256"
	"encoding/base64"
	"io/fs"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/vlmfleet/vlmfleet/controller/access"
	"github.com/vlmfleet/vlmfleet/explorer"
)

// pageRoutes are the HTML pages a controller serves, each with the file
// of web it is ("" for the explorer's own): a page of web without a route
// here fails TestEveryPageHasAContentSecurityPolicy.
var pageRoutes = map[string]string{
	"/live": "live.html", "/fleet": "fleet.html", "/sweeps": "sweeps.html", "/sweeps/s-1": "sweep.html",
	"/": "", "/index.html": "", "/compare": "", "/profiles": "",
}

var inlineElement = regexp.MustCompile(`(?s)<(script|style)>(.*?)</(?:script|style)>`)

// checkPagePolicy checks that a page's answer keeps it out of other sites'
// frames and runs only its own scripts: no inline script or style but
// those the policy names by hash, no style attribute or event handler
// (which no hash allows).
func checkPagePolicy(t *testing.T, path, body string, h http.Header) {
	t.Helper()
	csp := h.Get("Content-Security-Policy")
	if !strings.Contains(csp, "frame-ancestors 'none'") || !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-") {
		t.Errorf("GET %s: Content-Security-Policy %q, want script-src 'self' and frame-ancestors 'none', nothing unsafe", path, csp)
	}
	if h.Get("X-Frame-Options") != "DENY" || h.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("GET %s: X-Frame-Options %q, X-Content-Type-Options %q", path, h.Get("X-Frame-Options"), h.Get("X-Content-Type-Options"))
	}
	for _, m := range inlineElement.FindAllStringSubmatch(body, -1) {
		sum := sha256.Sum256([]byte(m[2]))
		if hash := "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"; !strings.Contains(csp, m[1]+"-src 'self'") || !strings.Contains(csp, hash) {
			t.Errorf("GET %s: the policy %q does not allow the inline <%s> %s", path, csp, m[1], hash)
		}
	}
	if m := regexp.MustCompile(`\s(style|on[a-z]+)="`).FindString(body); m != "" {
		t.Errorf("GET %s: the page has an attribute %q that its policy blocks", path, m)
	}
}

// Every HTML page the controller serves, its own and the explorer's, and
// the page it shows without the explorer, carries a Content-Security-
// Policy that allows only its own scripts and no framing; every other
// answer carries one that allows nothing.
func TestEveryPageHasAContentSecurityPolicy(t *testing.T) {
	routed := map[string]bool{}
	for _, f := range pageRoutes {
		routed[f] = true
	}
	files, err := fs.Glob(webFiles, "web/*.html")
	if err != nil || len(files) == 0 {
		t.Fatalf("web/*.html: %v %v", files, err)
	}
	for _, f := range files {
		if !routed[strings.TrimPrefix(f, "web/")] {
			t.Errorf("%s has no route in pageRoutes: add it, so that its policy is tested", f)
		}
	}
	c := startControllerWith(t, Options{DataDir: t.TempDir(),
		Explorer: func(runs RunSource) http.Handler { return explorer.NewHandler(runs, zerolog.Nop()) }})
	for path := range pageRoutes {
		code, body, h := send(t, http.MethodGet, c.HTTPURL()+path, "", nil)
		if code != http.StatusOK || !strings.HasPrefix(h.Get("Content-Type"), "text/html") {
			t.Errorf("GET %s: %d %s", path, code, h.Get("Content-Type"))
		}
		checkPagePolicy(t, path, body, h)
	}
	bare := startController(t, t.TempDir())
	code, body, h := send(t, http.MethodGet, bare.HTTPURL()+"/", "", nil)
	if code != http.StatusOK {
		t.Errorf("GET / without the explorer: %d", code)
	}
	checkPagePolicy(t, "/ without the explorer", body, h)
	for _, tc := range []struct{ path, host string }{{"/api/health", ""}, {"/api/agents", ""}, {"/api/nothing", ""}, {"/live", "evil.example"}} {
		_, _, h := send(t, http.MethodGet, c.HTTPURL()+tc.path, "", map[string]string{"Host": tc.host})
		if h.Get("Content-Security-Policy") != access.DefaultPolicy || h.Get("X-Frame-Options") != "DENY" || h.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s (Host %q): Content-Security-Policy %q, X-Frame-Options %q, want %q and DENY", tc.path, tc.host, h.Get("Content-Security-Policy"), h.Get("X-Frame-Options"), access.DefaultPolicy)
		}
	}
}

// The /login cookie is a read session, not the API token: it reads, but
// neither it nor its value as a bearer token makes a change.
func TestLoginCookieIsAReadSession(t *testing.T) {
	c := startOffLoopback(t, false)
	u := c.HTTPURL()
	code, _, h := send(t, http.MethodGet, u+"/login?token="+c.APIToken(), "", nil)
	name, value, _ := strings.Cut(strings.Split(h.Get("Set-Cookie"), ";")[0], "=")
	if code != http.StatusSeeOther || value == "" {
		t.Fatalf("login: %d, Set-Cookie %q", code, h.Get("Set-Cookie"))
	}
	if strings.Contains(value, c.APIToken()) {
		t.Errorf("the cookie %s=%s carries the API token", name, value)
	}
	jar := map[string]string{"Cookie": name + "=" + value}
	if code, body, _ := send(t, http.MethodGet, u+"/api/runs", "", jar); code != http.StatusOK {
		t.Errorf("GET with the cookie: %d %s, want 200", code, body)
	}
	asBearer := map[string]string{"Authorization": "Bearer " + value}
	if code, _, _ := send(t, http.MethodGet, u+"/api/runs", "", asBearer); code != http.StatusUnauthorized {
		t.Errorf("GET with the cookie's value as bearer token: %d, want 401", code)
	}
	for _, change := range []struct{ method, path, body string }{
		{http.MethodPost, "/api/sweeps", validSweep},
		{http.MethodDelete, "/api/sweeps/s-1", ""},
		{http.MethodPost, "/api/agents/a1/credentials", "{}"},
	} {
		for what, hdr := range map[string]map[string]string{"the cookie": jar, "the cookie's value as bearer token": asBearer} {
			withType := map[string]string{"Content-Type": "application/json"}
			for k, v := range hdr {
				withType[k] = v
			}
			if code, body, _ := send(t, change.method, u+change.path, change.body, withType); code != http.StatusUnauthorized {
				t.Errorf("%s %s with %s: %d %s, want 401", change.method, change.path, what, code, body)
			}
		}
	}
}
