package explorer

import (
	"bytes"
	"encoding/json"
	"net/http"
	"time"

	"github.com/rs/zerolog"

	"github.com/vlmfleet/vlmfleet/explorer/web"
)

// Paths served by NewHandler.
const (
	PathData = "/api/explorer/data"
	PathRows = "/api/explorer/rows"
)

type handler struct {
	src RunSource
	log zerolog.Logger
	now func() time.Time
	// regressions remembers the verdicts of the rows' run pairs.
	regressions regressionCache
}

// NewHandler serves GET /api/explorer/data (the Dataset), GET
// /api/explorer/rows (the table at a Query, for scripts), GET
// /api/explorer/compare (two runs side by side, when src is also a
// RunLoader) and hands everything else (the pages and their static files)
// to web.Handler.
func NewHandler(src RunSource, log zerolog.Logger) http.Handler {
	h := &handler{src: src, log: log.With().Str("component", "explorer").Logger(), now: time.Now}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+PathData, h.data)
	mux.HandleFunc("GET "+PathRows, h.rows)
	mux.HandleFunc("GET "+PathCompare, h.compare)
	mux.HandleFunc("/api/explorer/", h.other)
	mux.Handle("/", web.Handler())
	return mux
}

func (h *handler) dataset(r *http.Request) (Dataset, error) {
	runs, err := h.src.Runs(r.Context())
	if err != nil {
		return Dataset{}, err
	}
	ds := Aggregate(runs, h.now())
	if load, ok := h.src.(RunLoader); ok {
		if err := h.regressions.flagRegressions(r.Context(), &ds, load); err != nil {
			// The table is still right; only a marker may be missing.
			h.log.Warn().Err(err).Msg("comparing rows' runs with the ones before")
		}
	}
	return ds, nil
}

func (h *handler) data(w http.ResponseWriter, r *http.Request) {
	ds, err := h.dataset(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.writeJSON(w, r, http.StatusOK, ds)
}

func (h *handler) rows(w http.ResponseWriter, r *http.Request) {
	q, err := ParseQuery(r.URL.Query())
	if err != nil {
		h.writeJSON(w, r, http.StatusBadRequest, errorBody{Error: err.Error()})
		return
	}
	ds, err := h.dataset(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.writeJSON(w, r, http.StatusOK, Select(ds, q))
}

func (h *handler) other(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case PathData, PathRows, PathCompare:
		w.Header().Set("Allow", "GET, HEAD")
		h.writeJSON(w, r, http.StatusMethodNotAllowed, errorBody{Error: r.Method + " " + r.URL.Path + ": only GET is allowed"})
	default:
		h.writeJSON(w, r, http.StatusNotFound, errorBody{Error: r.URL.Path + ": not found; the explorer serves " + PathData + ", " + PathRows + " and " + PathCompare})
	}
}

type errorBody struct {
	Error string `json:"error"`
}

func (h *handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	h.log.Error().Err(err).Str("path", r.URL.Path).Msg("reading runs for the explorer")
	h.writeJSON(w, r, http.StatusInternalServerError, errorBody{Error: "reading runs: " + err.Error()})
}

// writeJSON answers with v, encoded whole first so that an encoding failure
// still gets a proper status.
func (h *handler) writeJSON(w http.ResponseWriter, r *http.Request, status int, v any) {
	var buf bytes.Buffer
	if err := json.NewEncoder(&buf).Encode(v); err != nil {
		h.log.Error().Err(err).Str("path", r.URL.Path).Msg("encoding explorer response")
		http.Error(w, `{"error":"encoding the response failed"}`, http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(buf.Bytes())
	}
}
