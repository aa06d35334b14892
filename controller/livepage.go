package controller

import (
	_ "embed"
	"net/http"
)

// livePage is the live progress page: static HTML and plain JavaScript that
// loads /api/live and then follows /api/events.
//
//go:embed web/live.html
var livePage []byte

func (c *Controller) handleLivePage(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	_, _ = w.Write(livePage)
}
