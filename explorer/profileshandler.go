package explorer

import (
	"net/http"

	"github.com/vlmfleet/vlmfleet/explorer/profiles"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// profiles answers GET /api/explorer/profiles?model=&gpu=&precision=&tp=&profile=&source=:
// the published lines and the runs' measured ones (profiles.Measured),
// each measured line after the published line of its identity, filtered.
func (h *handler) profiles(w http.ResponseWriter, r *http.Request) {
	f, err := profiles.ParseFilter(r.URL.Query())
	if err != nil {
		h.writeJSON(w, r, http.StatusBadRequest, errorBody{Error: err.Error()})
		return
	}
	published, err := profiles.Published()
	if err != nil {
		h.log.Error().Err(err).Msg("reading the built-in published profile lines")
		h.writeJSON(w, r, http.StatusInternalServerError, errorBody{Error: err.Error()})
		return
	}
	s, err := h.snapshot(r.Context())
	if err != nil {
		h.fail(w, r, err)
		return
	}
	rows := f.Apply(profiles.Rows(profiles.Join(published, s.profiles)))
	h.writeJSON(w, r, http.StatusOK, protocol.ProfileRows{Rows: rows})
}
