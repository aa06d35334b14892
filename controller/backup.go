package controller

import (
	"net/http"
	"strconv"
	"time"
)

// handleBackup answers GET /api/backup with a consistent copy of the store
// (see store.Backup) taken while the controller runs. The copy holds every
// result and the agents' enrolments, so it always needs the API token,
// even where reads are open. Content-Length is the copy's size, so a
// client sees a copy cut short by an error as the short read it is.
func (c *Controller) handleBackup(w http.ResponseWriter, r *http.Request) {
	if !c.sec.BearerOK(r) {
		c.sec.Unauthorized(w, r, "a backup holds the whole store and always needs the API token")
		return
	}
	name := "vlmfleet-" + time.Now().UTC().Format("20060102-150405") + ".db"
	h := w.Header()
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Content-Disposition", `attachment; filename="`+name+`"`)
	h.Set("Cache-Control", "no-store")
	n, err := c.store.Backup(w, func(size int64) { h.Set("Content-Length", strconv.FormatInt(size, 10)) })
	if err != nil {
		c.log.Error().Err(err).Int64("written", n).Msg("backup over HTTP failed; the client gets a short copy")
		return
	}
	c.log.Info().Int64("bytes", n).Str("remote", r.RemoteAddr).Msg("store backed up over HTTP")
}
