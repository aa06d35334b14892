// Package web holds the explorer page. STUB: the owner replaces this file.
package web

import (
	"io"
	"net/http"
)

// Handler serves the page and its static files.
func Handler() http.Handler { return http.NotFoundHandler() }

// Export writes one self-contained HTML file with dataset (JSON) inside.
func Export(w io.Writer, dataset []byte) error { return nil }
