package controller

import (
	_ "embed"
	"net/http"
)

// fleetPage is the fleet page: every agent with its device, deployments,
// labels, state, current job, sparklines of its live telemetry and a drain
// button. Static HTML and plain JavaScript that loads /api/live and then
// follows /api/events; the drain button sends the token typed on the page.
//
//go:embed web/fleet.html
var fleetPage []byte

func (c *Controller) handleFleetPage(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	_, _ = w.Write(fleetPage)
}
