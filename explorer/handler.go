package explorer

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/vlmfleet/vlmfleet/explorer/profiles"
	"github.com/vlmfleet/vlmfleet/explorer/web"
)

type handler struct {
	src RunSource
	log zerolog.Logger
	now func() time.Time
	// regressions remembers the verdicts of the rows' run pairs.
	regressions regressionCache
	// cache holds the aggregate of a Generational source.
	cache datasetCache
}

// NewHandler serves GET /api/explorer/data (the Dataset), GET
// /api/explorer/rows (the table at a Query, for scripts), GET
// /api/explorer/compare (two runs side by side, when src is also a
// RunLoader), GET /api/explorer/profiles (the latency and throughput
// tables: the published lines and the measured ones, from the runs'
// profile levels) and hands everything else (the pages and their static
// files) to web.Handler. When src is Generational, the aggregate and the encoded
// answers are kept until its generation moves.
//
// pageOpts are the pages' own options: web.WithLab when a controller
// serves them among its other pages.
func NewHandler(src RunSource, log zerolog.Logger, pageOpts ...web.Option) http.Handler {
	h := &handler{src: src, log: log.With().Str("component", "explorer").Logger(), now: time.Now}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+PathData, h.data)
	mux.HandleFunc("GET "+PathRows, h.rows)
	mux.HandleFunc("GET "+PathCompare, h.compare)
	mux.HandleFunc("GET "+PathProfiles, h.profiles)
	mux.HandleFunc("/api/explorer/", h.other)
	mux.Handle("/", web.Handler(append(pageOpts, web.WithTableRows(h.firstRows))...))
	return mux
}

// firstRows is the served page's table rows: the first rows of the
// default view, written once per generation of the runs. Without them
// (the runs could not be read) the page goes out with an empty table and
// its script reports the failure when it asks for the data.
func (h *handler) firstRows(r *http.Request) []byte {
	s, err := h.snapshot(r.Context())
	if err != nil {
		h.log.Error().Err(err).Str("path", r.URL.Path).Msg("reading runs for the page's first rows")
		return nil
	}
	rows, err := s.encoded("first-rows-html", func() ([]byte, error) { return FirstRowsHTML(s.ds) })
	if err != nil {
		h.log.Error().Err(err).Str("path", r.URL.Path).Msg("writing the page's first rows")
		return nil
	}
	return rows
}

// snapshot is the aggregate of the runs as they are now: the cached one
// while the source's generation has not moved, else a new one.
func (h *handler) snapshot(ctx context.Context) (*snapshot, error) {
	g, ok := h.src.(Generational)
	if !ok {
		return h.build(ctx, 0)
	}
	gen := g.RunsGeneration()
	return h.cache.get(ctx, gen, func(ctx context.Context) (*snapshot, error) { return h.build(ctx, gen) })
}

func (h *handler) build(ctx context.Context, gen uint64) (*snapshot, error) {
	runs, err := h.src.Runs(ctx)
	if err != nil {
		return nil, err
	}
	s := &snapshot{gen: gen, ds: Aggregate(runs, h.now())}
	var skipped []error
	s.profiles, skipped = profiles.Measured(runs)
	for _, err := range skipped {
		h.log.Warn().Err(err).Msg("a measured profile line left out")
	}
	if load, ok := h.src.(RunLoader); ok {
		h.regressions.forgetIfReplaced(h.src)
		if err := h.regressions.flagRegressions(ctx, &s.ds, load); err != nil {
			// The table is still right; only a marker may be missing, so
			// this answer goes out but is not kept: the next request
			// tries the pair again.
			h.log.Warn().Err(err).Msg("comparing rows' runs with the ones before")
			s.partial = true
		}
	}
	return s, nil
}

func (h *handler) data(w http.ResponseWriter, r *http.Request) {
	s, err := h.snapshot(r.Context())
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.writeCached(w, r, s, "data", func() any { return s.ds })
}

func (h *handler) rows(w http.ResponseWriter, r *http.Request) {
	req, err := ParseRowsQuery(r.URL.Query())
	if err != nil {
		h.writeJSON(w, r, http.StatusBadRequest, errorBody{Error: err.Error()})
		return
	}
	s, err := h.snapshot(r.Context())
	if err != nil {
		h.fail(w, r, err)
		return
	}
	// The whole normalized query, so that a field added to Query is part
	// of the key without being listed here.
	key := fmt.Sprintf("rows|%+v|%+v", req.Query, req.Page)
	if c := req.Cost; c != nil {
		// Quoted, the currency cannot run into the figures before it.
		key += fmt.Sprintf("|cost|%g|%g|%g|%q", c.Price, c.Months, c.KWh, c.Currency)
	}
	h.writeCached(w, r, s, key, func() any { return req.Answer(s.ds) })
}

func (h *handler) other(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case PathData, PathRows, PathCompare, PathProfiles:
		w.Header().Set("Allow", "GET, HEAD")
		h.writeJSON(w, r, http.StatusMethodNotAllowed, errorBody{Error: r.Method + " " + r.URL.Path + ": only GET is allowed"})
	default:
		h.writeJSON(w, r, http.StatusNotFound, errorBody{Error: r.URL.Path + ": not found; the explorer serves " + PathData + ", " + PathRows + ", " + PathCompare + " and " + PathProfiles})
	}
}

type errorBody struct {
	Error string `json:"error"`
}

func (h *handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	h.log.Error().Err(err).Str("path", r.URL.Path).Msg("reading runs for the explorer")
	h.writeJSON(w, r, http.StatusInternalServerError, errorBody{Error: "reading runs: " + err.Error()})
}

// gzipAbove is the smallest body worth compressing: below it the gzip
// header and the work cost more than the bytes saved.
const gzipAbove = 8 << 10

// writeCached answers 200 with v encoded, keeping the encoding (and its
// gzip, for a client that accepts it) in s under key, so that the next
// request for the same answer of the same generation is only a write.
func (h *handler) writeCached(w http.ResponseWriter, r *http.Request, s *snapshot, key string, v func() any) {
	body, err := s.encoded(key, func() ([]byte, error) { return encodeJSON(v()) })
	if err != nil {
		h.log.Error().Err(err).Str("path", r.URL.Path).Msg("encoding explorer response")
		http.Error(w, `{"error":"encoding the response failed"}`, http.StatusInternalServerError)
		return
	}
	hdr := w.Header()
	hdr.Set("Vary", "Accept-Encoding")
	if len(body) > gzipAbove && acceptsGzip(r) {
		gz, err := s.encoded(key+"|gzip", func() ([]byte, error) { return gzipped(body) })
		if err == nil {
			hdr.Set("Content-Encoding", "gzip")
			body = gz
		} else {
			h.log.Warn().Err(err).Str("path", r.URL.Path).Msg("compressing explorer response; sent as it is")
		}
	}
	h.writeBody(w, r, http.StatusOK, body)
}

// writeJSON answers with v, encoded whole first so that an encoding failure
// still gets a proper status.
func (h *handler) writeJSON(w http.ResponseWriter, r *http.Request, status int, v any) {
	body, err := encodeJSON(v)
	if err != nil {
		h.log.Error().Err(err).Str("path", r.URL.Path).Msg("encoding explorer response")
		http.Error(w, `{"error":"encoding the response failed"}`, http.StatusInternalServerError)
		return
	}
	h.writeBody(w, r, status, body)
}

func (h *handler) writeBody(w http.ResponseWriter, r *http.Request, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
}

func encodeJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	if err := json.NewEncoder(&buf).Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// gzipped compresses at the fastest level: the body is compressed once
// per generation, and on a busy lab the generation moves often, so the
// time matters more than the last few percent.
func gzipped(body []byte) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(body); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// acceptsGzip reads Accept-Encoding: gzip (or *) listed without q=0.
func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		name, params, _ := strings.Cut(part, ";")
		name = strings.ToLower(strings.TrimSpace(name))
		if name != "gzip" && name != "*" {
			continue
		}
		q := strings.ReplaceAll(strings.TrimSpace(params), " ", "")
		if q == "q=0" || q == "q=0.0" || q == "q=0.00" || q == "q=0.000" {
			return false
		}
		return true
	}
	return false
}
