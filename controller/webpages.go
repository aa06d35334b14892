package controller

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"path"
	"strings"
	"time"
)

// The controller's own pages, static HTML and plain JavaScript over the
// API: /live (progress, following /api/events), /fleet (every agent, its
// telemetry and a drain button), /sweeps (list and submit) and
// /sweeps/{id} (one sweep's jobs, live, with cancel). What they share is
// one stylesheet and one script under /lab/, a path the explorer (mounted
// at "/", with its own /static/) does not use. They read with the
// browser's /login cookie (or on loopback) and change only with the token
// the user types in; guard applies to the assets as to the pages.
//
//go:embed web
var webFiles embed.FS

// webTypes are the content types of what web holds; a file of another
// kind is refused when the route is made.
var webTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
}

// webFile serves one file of web. The ETag is its content's hash and
// Cache-Control is no-cache: a browser revalidates every load (304 while
// unchanged), so a page never runs with an older controller's script.
func webFile(name string) http.HandlerFunc {
	data, err := webFiles.ReadFile("web/" + name)
	ctype, known := webTypes[path.Ext(name)]
	if err != nil || !known {
		// Both are fixed at build time: a wrong name is the code's mistake,
		// seen by the first test that starts a controller.
		panic(fmt.Sprintf("controller: no page web/%s of a known type: %v", name, err))
	}
	sum := sha256.Sum256(data)
	etag := `"` + hex.EncodeToString(sum[:16]) + `"`
	policy := ""
	if path.Ext(name) == ".html" {
		policy = pagePolicy(data)
	}
	return func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Type", ctype)
		h.Set("Cache-Control", "no-cache")
		h.Set("ETag", etag)
		h.Set("X-Content-Type-Options", "nosniff")
		if policy != "" {
			h.Set("Content-Security-Policy", policy)
		}
		http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(data))
	}
}

// pagePolicy is the Content-Security-Policy of a page: scripts and styles
// from this controller and the page's own inline <script> and <style>
// elements, by hash, so that markup a page shows by mistake (a name from
// the API) cannot run; fetches to this controller only; no page of another
// site may frame it (the pages keep the typed token in the tab).
func pagePolicy(html []byte) string {
	return "default-src 'none'; script-src 'self'" + inlineHashes(html, "<script>", "</script>") +
		"; style-src 'self'" + inlineHashes(html, "<style>", "</style>") +
		"; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
}

// inlineHashes lists, as CSP sources, the SHA-256 of the text of every
// element of html that opens with open exactly (no attributes) and ends
// with end: what a browser hashes to decide whether it may run.
func inlineHashes(html []byte, open, end string) string {
	var out strings.Builder
	for rest := html; ; {
		i := bytes.Index(rest, []byte(open))
		if i < 0 {
			return out.String()
		}
		rest = rest[i+len(open):]
		j := bytes.Index(rest, []byte(end))
		if j < 0 {
			return out.String()
		}
		sum := sha256.Sum256(rest[:j])
		out.WriteString(" 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'")
		rest = rest[j+len(end):]
	}
}
