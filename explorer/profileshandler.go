package explorer

import (
	"context"
	"net/http"

	"github.com/vlmfleet/vlmfleet/explorer/profiles"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// ProfileSource lists measured profile lines, oldest first. A RunSource
// that is also a ProfileSource has its lines set beside the published
// ones of the same identity (profiles.Join); without one, the endpoint
// answers the published lines alone.
type ProfileSource interface {
	ProfileRows(ctx context.Context) ([]protocol.ProfileRow, error)
}

// profiles answers GET /api/explorer/profiles?model=&gpu=&precision=&tp=&profile=:
// the published lines and the measured ones, each measured line after
// the published line of its identity, filtered.
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
	var measured []protocol.ProfileRow
	if src, ok := h.src.(ProfileSource); ok {
		if measured, err = src.ProfileRows(r.Context()); err != nil {
			h.log.Error().Err(err).Msg("reading measured profile lines")
			h.writeJSON(w, r, http.StatusInternalServerError, errorBody{Error: "reading measured profile lines: " + err.Error()})
			return
		}
	}
	rows := f.Apply(profiles.Rows(profiles.Join(published, measured)))
	h.writeJSON(w, r, http.StatusOK, protocol.ProfileRows{Rows: rows})
}
