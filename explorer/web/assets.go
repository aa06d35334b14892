// Package web is the explorer page: plain ES modules, a stylesheet and the
// vendored Chart.js, embedded in the binary and served with content-hash
// ETags, or written out as one self-contained HTML file by Export.
package web

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"mime"
	"path"
	"strings"
)

//go:embed static
var staticFiles embed.FS

// Markers in static/index.html where the served page links its assets and
// the exported file inlines them.
const (
	headMarker    = "<!--vlmfleet:head-->"
	scriptsMarker = "<!--vlmfleet:scripts-->"
)

// moduleOrder is the order Export concatenates the page's ES modules in: each
// after the modules it imports. It names every module app.js reaches, and no
// other (TestModuleOrderIsWhatAppImports).
func moduleOrder() []string {
	return []string{"logic.js", "chartview.js", "labchrome.js", "dom.js", "cost.js", "table.js", "state.js",
		"filters.js", "selectors.js", "rowchart.js", "detail.js", "presets.js", "summary.js", "share.js", "app.js"}
}

const chartLibPath = "vendor/chart.umd.min.js"

// asset is one file as served: its bytes, content type and strong ETag.
type asset struct {
	body  []byte
	ctype string
	etag  string
	hash  string
}

func newAsset(name string, body []byte) asset {
	sum := sha256.Sum256(body)
	h := hex.EncodeToString(sum[:8])
	return asset{body: body, ctype: contentType(name), etag: `"` + h + `"`, hash: h}
}

func contentType(name string) string {
	switch path.Ext(name) {
	case ".js":
		return "text/javascript; charset=utf-8"
	case ".css":
		return "text/css; charset=utf-8"
	case ".html":
		return "text/html; charset=utf-8"
	case ".md":
		return "text/markdown; charset=utf-8"
	case ".json":
		return "application/json"
	}
	if t := mime.TypeByExtension(path.Ext(name)); t != "" {
		return t
	}
	return "application/octet-stream"
}

// loadAssets reads every embedded file under static/, keyed by its path
// below static/ ("app.js", "vendor/chart.umd.min.js").
func loadAssets() (map[string]asset, error) {
	out := map[string]asset{}
	err := fs.WalkDir(staticFiles, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		b, err := staticFiles.ReadFile(p)
		if err != nil {
			return fmt.Errorf("read embedded %s: %w", p, err)
		}
		name := strings.TrimPrefix(p, "static/")
		out[name] = newAsset(name, b)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("explorer page assets: %w", err)
	}
	for _, need := range append(moduleOrder(), "index.html", "style.css", chartLibPath, "compare.html", "compare.js", "compare.css",
		"profiles.html", "profiles.js", "profiles.css") {
		if _, ok := out[need]; !ok {
			return nil, fmt.Errorf("explorer page assets: static/%s is missing", need)
		}
	}
	return out, nil
}

// fillMarkers puts head and scripts in place of the markers in the page.
func fillMarkers(page, head, scripts string) (string, error) {
	if strings.Count(page, headMarker) != 1 || strings.Count(page, scriptsMarker) != 1 {
		return "", fmt.Errorf("static/index.html must hold %s and %s exactly once", headMarker, scriptsMarker)
	}
	page = strings.Replace(page, headMarker, head, 1)
	return strings.Replace(page, scriptsMarker, scripts, 1), nil
}
