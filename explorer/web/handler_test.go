package web_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/vlmfleet/vlmfleet/explorer/web"
	"github.com/vlmfleet/vlmfleet/internal/testutil"
)

func get(t *testing.T, url string, header map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("read %s: %v", url, err)
	}
	return res, b
}

func TestHandlerServesThePageAndItsFiles(t *testing.T) {
	srv := httptest.NewServer(web.Handler())
	defer srv.Close()

	res, page := get(t, srv.URL+"/", nil)
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "text/html; charset=utf-8" {
		t.Fatalf("GET /: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	if !bytes.Contains(page, []byte("VLM Inference Benchmark Explorer")) || bytes.Contains(page, []byte("<!--vlmfleet:")) {
		t.Error("page lacks its title or still holds a marker")
	}
	if res.Header.Get("Cache-Control") != "no-cache" || res.Header.Get("Content-Security-Policy") == "" {
		t.Errorf("page headers: Cache-Control %q CSP %q", res.Header.Get("Cache-Control"), res.Header.Get("Content-Security-Policy"))
	}
	etag := res.Header.Get("ETag")
	if !regexp.MustCompile(`^"[0-9a-f]{16}"$`).MatchString(etag) {
		t.Fatalf("page ETag %q", etag)
	}
	if res, body := get(t, srv.URL+"/", map[string]string{"If-None-Match": etag}); res.StatusCode != http.StatusNotModified || len(body) != 0 {
		t.Errorf("If-None-Match with the ETag: %d, %d bytes; want 304 and no body", res.StatusCode, len(body))
	}
	if res, _ := get(t, srv.URL+"/", map[string]string{"If-None-Match": `"0000000000000000"`}); res.StatusCode != 200 {
		t.Errorf("If-None-Match with another ETag: %d, want 200", res.StatusCode)
	}

	// Every file the page links is served, with its type, and cached for good under its hash.
	links := regexp.MustCompile(`(?:src|href)="(static/[^"]+)"`).FindAllStringSubmatch(string(page), -1)
	if len(links) != 3 {
		t.Fatalf("page links %d files, want 3 (style, chart library, app): %v", len(links), links)
	}
	types := map[string]string{".css": "text/css; charset=utf-8", ".js": "text/javascript; charset=utf-8"}
	for _, l := range links {
		res, body := get(t, srv.URL+"/"+l[1], nil)
		ext := l[1][strings.LastIndex(strings.Split(l[1], "?")[0], "."):]
		ext = strings.Split(ext, "?")[0]
		if res.StatusCode != 200 || len(body) == 0 || res.Header.Get("Content-Type") != types[ext] {
			t.Errorf("%s: %d %q, %d bytes", l[1], res.StatusCode, res.Header.Get("Content-Type"), len(body))
		}
		if res.Header.Get("Cache-Control") != "public, max-age=31536000, immutable" {
			t.Errorf("%s: Cache-Control %q, want immutable under its hash", l[1], res.Header.Get("Cache-Control"))
		}
		if res.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: no nosniff", l[1])
		}
	}
	// Every module of the page, asked for without a hash, revalidates.
	for _, name := range web.ModuleOrder() {
		res, _ := get(t, srv.URL+"/static/"+name, nil)
		if res.StatusCode != 200 || res.Header.Get("Cache-Control") != "no-cache" || res.Header.Get("ETag") == "" {
			t.Errorf("%s: %d Cache-Control %q ETag %q", name, res.StatusCode, res.Header.Get("Cache-Control"), res.Header.Get("ETag"))
		}
		if res, _ := get(t, srv.URL+"/static/"+name, map[string]string{"If-None-Match": `W/` + res.Header.Get("ETag")}); res.StatusCode != 304 {
			t.Errorf("%s with a weak If-None-Match: %d, want 304", name, res.StatusCode)
		}
	}
	if res, body := get(t, srv.URL+"/static/vendor/chart.js-LICENSE.md", nil); res.StatusCode != 200 || !bytes.Contains(body, []byte("MIT")) {
		t.Errorf("Chart.js licence: %d", res.StatusCode)
	}
	for _, p := range []string{"/static/nope.js", "/static/../handler.go", "/nope", "/static/index.html"} {
		if res, _ := get(t, srv.URL+p, nil); res.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", p, res.StatusCode)
		}
	}
	if code := testutil.Status(t, http.MethodPost, srv.URL+"/", "x"); code != http.StatusMethodNotAllowed {
		t.Errorf("POST /: %d, want 405", code)
	}
}

func TestExportIsSelfContained(t *testing.T) {
	var buf bytes.Buffer
	data := `{"schema":1,"rows":[{"id":"x","model":"</script><script>alert(1)</script>","points":[]}]}`
	if err := web.Export(&buf, []byte(data)); err != nil {
		t.Fatalf("Export: %v", err)
	}
	out := buf.String()
	if strings.Count(strings.ToLower(out), "</script") != 3 {
		t.Errorf("the data ended a script element early: %d </script", strings.Count(strings.ToLower(out), "</script"))
	}
	if !strings.Contains(out, `\u003c/script>\u003cscript>alert(1)`) {
		t.Error("the data is not inline, escaped")
	}
	for _, bad := range []string{`src="`, `href="static`, `<link rel="stylesheet"`, "<!--vlmfleet:", "\nimport {", "\nexport "} {
		if strings.Contains(out, bad) {
			t.Errorf("exported file holds %q: it must need nothing beside itself", bad)
		}
	}
	for _, want := range []string{"Chart.js v4", "function maxCameras(", "function createExplorer(", `id="vlmfleet-data"`, "What the numbers do not tell you"} {
		if !strings.Contains(out, want) {
			t.Errorf("exported file lacks %q", want)
		}
	}
}

func TestExportRejectsWhatIsNotADataset(t *testing.T) {
	for _, in := range []string{"", "null", "[]", `{"rows":`, `{"rows":{}}`, "<html>", `"text"`} {
		var buf bytes.Buffer
		err := web.Export(&buf, []byte(in))
		if err == nil {
			t.Errorf("Export(%q) accepted it", in)
			continue
		}
		if !strings.Contains(err.Error(), "dataset") || buf.Len() != 0 {
			t.Errorf("Export(%q): %v, wrote %d bytes", in, err, buf.Len())
		}
	}
}

func FuzzExport(f *testing.F) {
	f.Add([]byte(`{"rows":[]}`))
	f.Add([]byte(`{"rows":[{"model":"<!--<script>","points":[{"size":"720p"}]}]}`))
	f.Add([]byte(`{"rows":null,"x":"\u2028</SCRIPT>"}`))
	f.Add([]byte(`[1,2]`))
	f.Add([]byte(`{`))
	f.Fuzz(func(t *testing.T, in []byte) {
		var buf bytes.Buffer
		if err := web.Export(&buf, in); err != nil {
			if buf.Len() != 0 {
				t.Fatalf("failed export wrote %d bytes", buf.Len())
			}
			return
		}
		out := strings.ToLower(buf.String())
		start := strings.Index(out, `id="vlmfleet-data">`)
		end := strings.Index(out[start:], "</script>")
		if start < 0 || end < 0 {
			t.Fatal("no data element")
		}
		inline := out[start+len(`id="vlmfleet-data">`) : start+end]
		if strings.Contains(inline, "<") {
			t.Fatalf("data element holds a raw '<': %q", inline)
		}
	})
}
