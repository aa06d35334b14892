package controller

import (
	_ "embed"
	"net/http"
)

// The sweeps pages: static HTML and plain JavaScript over the API. /sweeps
// lists every sweep and submits new ones; /sweeps/{id} shows one sweep's
// jobs live and cancels them. Both read with the browser's /login cookie
// (or on loopback) and change only with the token the user types in.
var (
	//go:embed web/sweeps.html
	sweepsPage []byte
	//go:embed web/sweep.html
	sweepPage []byte
)

func (c *Controller) handleSweepsPage(w http.ResponseWriter, r *http.Request) {
	servePage(w, sweepsPage)
}

func (c *Controller) handleSweepPage(w http.ResponseWriter, r *http.Request) {
	servePage(w, sweepPage)
}

func servePage(w http.ResponseWriter, page []byte) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	_, _ = w.Write(page)
}
