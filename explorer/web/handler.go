package web

import (
	"bytes"
	"fmt"
	"html"
	"net/http"
	"strings"
	"time"
)

// Handler serves the page at "/", the compare page at "/compare" and their
// files under "/static/". Every
// response carries a content-hash ETag (If-None-Match answers 304). Files the
// page links with ?v=<hash> are cached for a year, since a new build changes
// the link; everything else revalidates on each use.
func Handler(opts ...Option) http.Handler {
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	assets, err := loadAssets()
	if err != nil {
		return errorHandler(err)
	}
	index, err := servedIndex(assets, cfg)
	if err != nil {
		return errorHandler(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", pagePolicy)
		serveAsset(w, r, "index.html", index)
	})
	mux.HandleFunc("GET /index.html", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", pagePolicy)
		serveAsset(w, r, "index.html", index)
	})
	// The compare page loads its comparison from /api/explorer/compare.
	mux.HandleFunc("GET /compare", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", pagePolicy)
		serveAsset(w, r, "compare.html", assets["compare.html"])
	})
	mux.HandleFunc("GET /static/{file...}", func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("file")
		a, ok := assets[name]
		if !ok || name == "index.html" || name == "compare.html" {
			http.NotFound(w, r)
			return
		}
		serveAsset(w, r, name, a)
	})
	return mux
}

// pagePolicy keeps the served page to its own files; data: and blob: are for
// the PNG and CSV downloads.
const pagePolicy = "default-src 'self'; img-src 'self' data: blob:; script-src 'self'; style-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'self'"

// Option configures Handler.
type Option func(*config)

type config struct {
	firstRows string
}

// WithFirstRows has the served page show the first rows of its default
// view from path (a page of GET /api/explorer/rows, as many rows as the
// page displays at once) while the whole dataset is still on its way: the
// table shows rows without waiting for every row's every point.
func WithFirstRows(path string) Option {
	return func(c *config) { c.firstRows = path }
}

// dataPath is the explorer's data (explorer.PathData), which the served
// page reads.
const dataPath = "/api/explorer/data"

// servedIndex links the stylesheet, the chart library and the app module
// with their content hashes.
func servedIndex(assets map[string]asset, cfg config) (asset, error) {
	link := func(name string) string { return "static/" + name + "?v=" + assets[name].hash }
	first := ""
	if cfg.firstRows != "" {
		p := html.EscapeString(cfg.firstRows)
		first = fmt.Sprintf(`<meta name="vlmfleet-first-rows" content="%s">
<link rel="preload" href="%s" as="fetch" crossorigin="anonymous">
`, p, p)
	}
	// The data is asked for at once, beside the stylesheet and the scripts,
	// instead of after the modules have loaded and run; the page's fetch
	// takes the preloaded answer (same URL, mode and credentials).
	head := fmt.Sprintf(`%s<link rel="preload" href="%s" as="fetch" crossorigin="anonymous">
<link rel="stylesheet" href="%s">
<script defer src="%s"></script>`, first, dataPath, link("style.css"), link(chartLibPath))
	scripts := fmt.Sprintf(`<script type="module" src="%s"></script>`, link("app.js"))
	page, err := fillMarkers(string(assets["index.html"].body), head, scripts)
	if err != nil {
		return asset{}, err
	}
	return newAsset("index.html", []byte(page)), nil
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
