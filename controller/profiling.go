package controller

import (
	"net/http"
	"net/http/pprof"
)

// profileRoutes serves Go's profiles under /debug/pprof/, for sizing the
// controller (docs/scaling.md: a heap profile says what its memory holds).
// They need the API token in the header even for reads on loopback or
// under --public-read: a CPU profile costs the controller CPU, and a
// goroutine dump shows what it is doing.
func (c *Controller) profileRoutes(mux *http.ServeMux) {
	mux.Handle("GET /debug/pprof/", c.tokenOnly(http.HandlerFunc(pprof.Index)))
	mux.Handle("GET /debug/pprof/profile", c.tokenOnly(http.HandlerFunc(pprof.Profile)))
}

func (c *Controller) tokenOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !c.sec.BearerOK(r) {
			c.sec.Unauthorized(w, r, "Go's profiles need the controller's API token")
			return
		}
		next.ServeHTTP(w, r)
	})
}
