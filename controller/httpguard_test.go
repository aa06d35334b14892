package controller

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/internal/testutil"
)

// send sends one request with the headers given ("Host" sets the Host
// header) and returns the status, the body and the response's headers.
func send(t *testing.T, method, url, body string, hdr map[string]string) (int, string, http.Header) {
	t.Helper()
	req := testutil.NewRequest(t, method, url, body)
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	// No redirects followed: /login's 303 is what is tested.
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

func errorOf(body string) string {
	var e struct{ Error string }
	_ = json.Unmarshal([]byte(body), &e)
	return e.Error
}

const validSweep = `{"agents":["a1"],"workload":{"sizes":["720p"],"cameras":[1],"multi_image_sizes":[]}}`

// The default controller creates its token at the first start in
// <data-dir>/api-token, readable only by its owner, and reuses it.
func TestAPITokenFile(t *testing.T) {
	dir := t.TempDir()
	c := startController(t, dir)
	file := filepath.Join(dir, api.TokenFileName)
	if c.APITokenFile() != file {
		t.Fatalf("APITokenFile %q, want %q", c.APITokenFile(), file)
	}
	st, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("token file mode %04o, want 0600", st.Mode().Perm())
	}
	data, _ := os.ReadFile(file)
	tok := c.APIToken()
	if strings.TrimSpace(string(data)) != tok || len(tok) != 64 {
		t.Fatalf("token %q, file holds %q; want the same 64 hex digits", tok, data)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if again := startController(t, dir); again.APIToken() != tok {
		t.Errorf("a restart made a new token")
	}
	open := t.TempDir()
	if err := os.WriteFile(filepath.Join(open, api.TokenFileName), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := New(Options{DataDir: open, Log: zerolog.Nop()}); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("a token file others may read: %v, want an error saying chmod 600", err)
	}
	c2, err := New(Options{DataDir: t.TempDir(), APIToken: "given-token-0123456789"})
	if err != nil || c2.APIToken() != "given-token-0123456789" || c2.APITokenFile() != "" {
		t.Errorf("Options.APIToken: %v, %q", err, c2.APIToken())
	}
	_ = c2.Close()
}

// Every change needs the token, on every route, known or not; reads on
// loopback do not.
func TestChangesNeedTheToken(t *testing.T) {
	c := startController(t, t.TempDir())
	announced(t, c, "a1", "d1")
	u := c.HTTPURL()
	hdr := map[string]string{"Content-Type": "application/json"}
	for _, tc := range []struct{ method, path, body string }{
		{http.MethodPost, "/api/sweeps", validSweep},
		{http.MethodPost, "/api/runs/import", `{"runs":[]}`},
		{http.MethodDelete, "/api/sweeps/s1", ""},
		{http.MethodDelete, "/api/jobs/j1", ""},
		{http.MethodPost, "/api/agents/a1/credentials", `{}`}, // routes added later are covered too
		{http.MethodPost, "/api/join-tokens", `{}`},
		{http.MethodDelete, "/api/join-tokens/0123456789ab", ""},
		{http.MethodPost, "/api/joins", `{}`}, // only POST /api/join goes without the token
		{http.MethodPut, "/api/join", `{}`},
		{http.MethodPut, "/api/sweeps/s1", `{}`},
		{http.MethodPatch, "/api/runs/r1", `{}`},
		{http.MethodPost, "/", `{}`},
	} {
		code, body, h := send(t, tc.method, u+tc.path, tc.body, hdr)
		if code != http.StatusUnauthorized || !strings.Contains(errorOf(body), "api-token") || h.Get("WWW-Authenticate") == "" {
			t.Errorf("%s %s without a token: %d %s, want 401 naming the token file", tc.method, tc.path, code, body)
		}
		code, body, _ = send(t, tc.method, u+tc.path, tc.body, map[string]string{"Content-Type": "application/json", "Authorization": "Bearer not-the-token"})
		if code != http.StatusUnauthorized || !strings.Contains(errorOf(body), "does not match") {
			t.Errorf("%s %s with a wrong token: %d %s, want 401", tc.method, tc.path, code, body)
		}
	}
	auth := map[string]string{"Content-Type": "application/json", "Authorization": "Bearer " + c.APIToken()}
	if code, body, _ := send(t, http.MethodPost, u+"/api/sweeps", validSweep, auth); code != http.StatusCreated {
		t.Fatalf("POST /api/sweeps with the token: %d %s", code, body)
	}
	auth["Authorization"] = "bearer  " + c.APIToken() + " "
	if code, body, _ := send(t, http.MethodDelete, u+"/api/jobs/nope", "", auth); code != http.StatusNotFound {
		t.Errorf("DELETE with the token: %d %s, want 404", code, body)
	}
	for _, path := range []string{"/api/sweeps", "/api/health", "/live", "/"} {
		if code, body, _ := send(t, http.MethodGet, u+path, "", nil); code != http.StatusOK {
			t.Errorf("GET %s on loopback without a token: %d %s", path, code, body)
		}
	}
}

// A change from another origin is refused (403) even with the token; one
// from the controller's own origin is not.
func TestChangesFromAnotherOriginAreRefused(t *testing.T) {
	c := startControllerWith(t, Options{DataDir: t.TempDir(), HTTPHosts: []string{"lab.example"}})
	announced(t, c, "a1", "d1")
	with := func(k, v string) map[string]string {
		return map[string]string{"Content-Type": "application/json", "Authorization": "Bearer " + c.APIToken(), k: v}
	}
	for _, h := range []map[string]string{
		with("Origin", "http://evil.example"),
		with("Origin", "null"),
		with("Origin", "http://localhost:1"),
		with("Sec-Fetch-Site", "cross-site"),
	} {
		code, body, _ := send(t, http.MethodPost, c.HTTPURL()+"/api/sweeps", validSweep, h)
		if code != http.StatusForbidden || !strings.Contains(errorOf(body), "refused") {
			t.Errorf("POST with %v: %d %s, want 403", h, code, body)
		}
	}
	for _, h := range []map[string]string{
		with("Origin", c.HTTPURL()),
		with("Origin", "https://lab.example"),
		with("Sec-Fetch-Site", "same-origin"),
	} {
		if code, body, _ := send(t, http.MethodPost, c.HTTPURL()+"/api/sweeps", validSweep, h); code != http.StatusCreated {
			t.Errorf("POST with %v: %d %s, want 201", h, code, body)
		}
	}
	if sweeps, _ := c.store.Sweeps(context.Background()); len(sweeps) != 3 {
		t.Errorf("%d sweeps stored, want the 3 from the controller's own origin", len(sweeps))
	}
}

// A change's body must be JSON (415 otherwise); a DELETE without a body
// needs no Content-Type.
func TestChangesMustBeJSON(t *testing.T) {
	c := startController(t, t.TempDir())
	auth := "Bearer " + c.APIToken()
	for _, ct := range []string{"text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", ""} {
		code, body, _ := send(t, http.MethodPost, c.HTTPURL()+"/api/sweeps", validSweep, map[string]string{"Content-Type": ct, "Authorization": auth})
		if code != http.StatusUnsupportedMediaType || !strings.Contains(errorOf(body), "application/json") {
			t.Errorf("Content-Type %q: %d %s, want 415", ct, code, body)
		}
	}
	code, body, _ := send(t, http.MethodPost, c.HTTPURL()+"/api/sweeps", `{"workload":{"cameras":[0]}}`, map[string]string{"Content-Type": "application/json; charset=utf-8", "Authorization": auth})
	if code != http.StatusBadRequest {
		t.Errorf("JSON with a charset: %d %s, want the sweep's 400", code, body)
	}
	if code, body, _ := send(t, http.MethodDelete, c.HTTPURL()+"/api/sweeps/nope", "", map[string]string{"Authorization": auth}); code != http.StatusNotFound {
		t.Errorf("DELETE without a body: %d %s, want 404", code, body)
	}
}

// A Host the controller does not serve gets 421 (DNS rebinding); loopback
// names with any port, the listener's address and --http-host names pass.
func TestForeignHostIsMisdirected(t *testing.T) {
	c := startControllerWith(t, Options{DataDir: t.TempDir(), HTTPHosts: []string{"Lab.Example.", "other.example:9000"}})
	u := c.HTTPURL()
	for _, host := range []string{"evil.example", "evil.example:" + strings.Split(u, ":")[2], "localhost.evil.example", "other.example:9001", "10.1.2.3"} {
		for _, m := range []string{http.MethodGet, http.MethodPost} {
			code, body, _ := send(t, m, u+"/api/runs/import", "", map[string]string{"Host": host})
			if code != http.StatusMisdirectedRequest || !strings.Contains(errorOf(body), "--http-host") {
				t.Errorf("%s with Host %q: %d %s, want 421", m, host, code, body)
			}
		}
	}
	// HTTP/1.0 without a Host header at all.
	conn, err := net.Dial("tcp", strings.TrimPrefix(u, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, _ = io.WriteString(conn, "GET /api/health HTTP/1.0\r\n\r\n")
	if resp, err := http.ReadResponse(bufio.NewReader(conn), nil); err != nil || resp.StatusCode != http.StatusMisdirectedRequest {
		t.Errorf("HTTP/1.0 without Host: %v, %v; want 421", resp, err)
	}
	for _, host := range []string{"localhost", "localhost:1", "LOCALHOST.:8080", "127.0.0.1:80", "127.0.0.2", "[::1]:8080", strings.TrimPrefix(u, "http://"), "lab.example", "lab.example:443", "other.example:9000"} {
		if code, body, _ := send(t, http.MethodGet, u+"/api/health", "", map[string]string{"Host": host}); code != http.StatusOK {
			t.Errorf("GET with Host %q: %d %s, want 200", host, code, body)
		}
	}
}

// startOffLoopback starts a controller listening on every address, whose
// reads then need the token unless public; in clear (TLS off), since
// these tests are about the guard (tls_test.go tests TLS).
func startOffLoopback(t *testing.T, public bool) *Controller {
	t.Helper()
	return startControllerWith(t, Options{DataDir: t.TempDir(), HTTPAddr: "0.0.0.0:0", TLS: TLSOff, PublicRead: public})
}

// Off loopback, reads need the token (header, or the cookie GET /login
// sets) unless --public-read; the cookie never authorises a change.
func TestReadsOffLoopback(t *testing.T) {
	c := startOffLoopback(t, false)
	u := c.HTTPURL()
	for _, path := range []string{"/api/runs", "/api/health", "/live", "/"} {
		code, body, _ := send(t, http.MethodGet, u+path, "", nil)
		if code != http.StatusUnauthorized || !strings.Contains(errorOf(body), "--public-read") {
			t.Errorf("GET %s without a token: %d %s, want 401", path, code, body)
		}
	}
	if code, body, _ := send(t, http.MethodGet, u+"/api/runs", "", map[string]string{"Authorization": "Bearer " + c.APIToken()}); code != http.StatusOK {
		t.Errorf("GET with the token: %d %s", code, body)
	}
	if code, _, h := send(t, http.MethodGet, u+"/login?token=wrong-token-0123456789", "", nil); code != http.StatusUnauthorized || h.Get("Set-Cookie") != "" {
		t.Errorf("login with a wrong token: %d, cookie %q", code, h.Get("Set-Cookie"))
	}
	code, _, h := send(t, http.MethodGet, u+"/login?token="+c.APIToken(), "", nil)
	cookie := h.Get("Set-Cookie")
	if code != http.StatusSeeOther || h.Get("Location") != "/" || !strings.Contains(cookie, "HttpOnly") || !strings.Contains(cookie, "SameSite=Strict") {
		t.Fatalf("login: %d, Location %q, cookie %q", code, h.Get("Location"), cookie)
	}
	jar := map[string]string{"Cookie": strings.Split(cookie, ";")[0]}
	if code, body, _ := send(t, http.MethodGet, u+"/api/runs", "", jar); code != http.StatusOK {
		t.Errorf("GET with the login cookie: %d %s", code, body)
	}
	jar["Content-Type"] = "application/json"
	if code, body, _ := send(t, http.MethodPost, u+"/api/sweeps", validSweep, jar); code != http.StatusUnauthorized {
		t.Errorf("POST with the login cookie only: %d %s, want 401", code, body)
	}

	pub := startOffLoopback(t, true)
	if code, body, _ := send(t, http.MethodGet, pub.HTTPURL()+"/api/runs", "", nil); code != http.StatusOK {
		t.Errorf("--public-read: GET without a token: %d %s", code, body)
	}
	if code, body, _ := send(t, http.MethodPost, pub.HTTPURL()+"/api/sweeps", validSweep, map[string]string{"Content-Type": "application/json"}); code != http.StatusUnauthorized {
		t.Errorf("--public-read: POST without a token: %d %s, want 401", code, body)
	}
}
