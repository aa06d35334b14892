package explorer

import (
	"errors"
	"net/http"
)

// compareError is the answer of a comparison that was refused.
type compareError struct {
	Error string `json:"error"`
	// Differences lists the parts of the configuration that differ (409).
	Differences []ConfigDiff `json:"differences,omitempty"`
}

// compare answers GET /api/explorer/compare?a=RUN&b=RUN: 200 with the
// Comparison, 400 without both ids, 404 for an unknown run, 409 for runs of
// different configurations (naming the parts that differ).
func (h *handler) compare(w http.ResponseWriter, r *http.Request) {
	load, ok := h.src.(RunLoader)
	if !ok {
		h.writeJSON(w, r, http.StatusNotImplemented, compareError{Error: "this explorer has no per-request records to compare runs with: compare on a controller"})
		return
	}
	q := r.URL.Query()
	a, b := q.Get("a"), q.Get("b")
	if a == "" || b == "" {
		h.writeJSON(w, r, http.StatusBadRequest, compareError{Error: "want ?a=RUN&b=RUN: the earlier run as a, the later as b"})
		return
	}
	ra, rb, err := loadPair(r.Context(), load, a, b)
	var missing *RunNotFoundError
	switch {
	case errors.As(err, &missing):
		h.writeJSON(w, r, http.StatusNotFound, compareError{Error: err.Error()})
		return
	case err != nil:
		h.fail(w, r, err)
		return
	}
	c, err := Compare(&ra, &rb)
	var mm *ConfigMismatchError
	if errors.As(err, &mm) {
		h.writeJSON(w, r, http.StatusConflict, compareError{Error: err.Error(), Differences: mm.Parts})
		return
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.writeJSON(w, r, http.StatusOK, c)
}
