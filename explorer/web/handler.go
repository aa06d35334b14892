package web

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Handler serves the page at "/", the compare page at "/compare", the
// latency and throughput page at "/profiles" and their files under
// "/static/". Every response carries a content-hash ETag (If-None-Match
// answers 304). Files the page links with ?v=<hash> are cached for a year,
// since a new build changes the link; everything else revalidates on each
// use.
func Handler(opts ...Option) http.Handler {
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	assets, err := loadAssets()
	if err != nil {
		return errorHandler(err)
	}
	if cfg.lab {
		assets = inLab(assets)
	}
	if assets, err = withProfileRule(assets); err != nil {
		return errorHandler(err)
	}
	index, err := servedIndex(assets)
	if err != nil {
		return errorHandler(err)
	}
	serveIndex := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", pagePolicy)
		var rows []byte
		if cfg.rows != nil {
			rows = cfg.rows(r)
		}
		serveAsset(w, r, "index.html", index.with(rows))
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", serveIndex)
	mux.HandleFunc("GET /index.html", serveIndex)
	// The compare page loads its comparison from /api/explorer/compare,
	// the profiles page its lines from /api/explorer/profiles.
	for _, page := range []struct{ path, file string }{{"/compare", "compare.html"}, {"/profiles", "profiles.html"}} {
		a := assets[page.file]
		mux.HandleFunc("GET "+page.path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Security-Policy", pagePolicy)
			serveAsset(w, r, page.file, a)
		})
	}
	mux.HandleFunc("GET /static/{file...}", func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("file")
		a, ok := assets[name]
		if !ok || isPage(name) {
			http.NotFound(w, r)
			return
		}
		serveAsset(w, r, name, a)
	})
	return mux
}

// pagePolicy keeps the served page to its own files, and keeps it out of
// other pages' frames (nothing frames it, and a frame could lure clicks);
// data: and blob: are for the PNG and CSV downloads.
const pagePolicy = "default-src 'self'; img-src 'self' data: blob:; script-src 'self'; style-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"

// Option configures Handler.
type Option func(*config)

type config struct {
	rows func(r *http.Request) []byte
	lab  bool
}

// WithLab marks the pages as served by a controller: they show the links
// to its other pages (Live, Fleet, Sweeps) and its health, as its own
// pages do. Without it (an explorer served alone) they show neither.
func WithLab() Option {
	return func(c *config) { c.lab = true }
}

// labMark is what WithLab sets on the pages' <html> element, which
// static/labchrome.js reads.
const labMark = `<html lang="en" data-lab="1">`

// isPage reports whether name is one of the pages, served at their own
// paths rather than under /static/.
func isPage(name string) bool {
	return name == "index.html" || name == "compare.html" || name == "profiles.html"
}

// inLab returns assets with the pages marked (labMark).
func inLab(assets map[string]asset) map[string]asset {
	out := make(map[string]asset, len(assets))
	for name, a := range assets {
		if isPage(name) {
			a = newAsset(name, bytes.Replace(a.body, []byte(`<html lang="en">`), []byte(labMark), 1))
		}
		out[name] = a
	}
	return out
}

// WithTableRows has the page served at "/" carry rows (<tr> elements, the
// first rows of the default view, written by the explorer from its data)
// in its table, so that the table shows rows as soon as the HTML and the
// stylesheet are parsed, before any script has run. rows is asked at each
// request and should return the same slice while the data has not changed:
// the page is made again only when the rows differ from the last ones.
func WithTableRows(rows func(r *http.Request) []byte) Option {
	return func(c *config) { c.rows = rows }
}

// dataPath is the explorer's data (explorer.PathData), which the served
// page reads.
const dataPath = "/api/explorer/data"

// tableBody is where the page's table rows go (static/index.html).
const tableBody = `<tbody id="tbody">`

// servedIndex links the stylesheet, the chart library and the app module
// with their content hashes.
func servedIndex(assets map[string]asset) (*indexPage, error) {
	link := func(name string) string { return "static/" + name + "?v=" + assets[name].hash }
	// The data is asked for at once, beside the stylesheet and the scripts,
	// instead of after the modules have loaded and run; the page's fetch
	// takes the preloaded answer (same URL, mode and credentials).
	head := fmt.Sprintf(`<link rel="preload" href="%s" as="fetch" crossorigin="anonymous">
<link rel="stylesheet" href="%s">
<script defer src="%s"></script>`, dataPath, link("style.css"), link(chartLibPath))
	scripts := fmt.Sprintf(`<script type="module" src="%s"></script>`, link("app.js"))
	page, err := fillMarkers(string(assets["index.html"].body), head, scripts)
	if err != nil {
		return nil, err
	}
	at := strings.Index(page, tableBody)
	if at < 0 || strings.Count(page, tableBody) != 1 {
		return nil, fmt.Errorf("static/index.html must hold %s exactly once", tableBody)
	}
	at += len(tableBody)
	return &indexPage{before: page[:at], after: page[at:], empty: newAsset("index.html", []byte(page))}, nil
}

// indexPage is the served page around its table's rows, and the last page
// made with rows, kept while the rows are the same.
type indexPage struct {
	before, after string
	empty         asset

	mu       sync.Mutex
	lastRows []byte
	last     asset
}

func (p *indexPage) with(rows []byte) asset {
	if len(rows) == 0 {
		return p.empty
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.lastRows == nil || !bytes.Equal(rows, p.lastRows) {
		body := make([]byte, 0, len(p.before)+len(rows)+len(p.after))
		body = append(append(append(body, p.before...), rows...), p.after...)
		p.lastRows, p.last = rows, newAsset("index.html", body)
	}
	return p.last
}

func serveAsset(w http.ResponseWriter, r *http.Request, name string, a asset) {
	h := w.Header()
	h.Set("Content-Type", a.ctype)
	h.Set("ETag", a.etag)
	h.Set("X-Content-Type-Options", "nosniff")
	if v := r.URL.Query().Get("v"); v != "" && v == a.hash {
		h.Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		h.Set("Cache-Control", "no-cache")
	}
	if noneMatch(r.Header.Get("If-None-Match"), a.etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(a.body))
}

// noneMatch reports whether an If-None-Match header names etag (weak
// comparison, as RFC 9110 asks for If-None-Match).
func noneMatch(header, etag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimSpace(t)
		if t == "*" || strings.TrimPrefix(t, "W/") == etag {
			return true
		}
	}
	return false
}

func errorHandler(err error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "explorer page unavailable: "+err.Error(), http.StatusInternalServerError)
	})
}
