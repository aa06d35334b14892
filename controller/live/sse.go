package live

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/vlmfleet/vlmfleet/controller/api"
)

// ssePing is how often an idle event stream sends a comment, so proxies
// and browsers keep the connection open.
const ssePing = 15 * time.Second

// ServeEvents streams live events as Server-Sent Events:
// "event: <kind>\ndata: <json of Event.Data>\n\n". ?kind=progress,state and
// ?agent=id narrow the stream. The stream starts with a ": connected"
// comment once the subscription is in place.
func (f *Feed) ServeEvents(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var kinds []string
	if k := q.Get("kind"); k != "" {
		kinds = strings.Split(k, ",")
	}
	agent := q.Get("agent")
	rc := http.NewResponseController(w)

	ch := make(chan api.Event, 256)
	cancel := f.events.Subscribe(func(e api.Event) {
		if (len(kinds) > 0 && !slices.Contains(kinds, e.Kind)) || (agent != "" && e.AgentID != agent) {
			return
		}
		select {
		case ch <- e:
		default: // a slow client loses live events rather than stalling others
		}
	})
	defer cancel()

	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if _, err := fmt.Fprint(w, ": connected\n\n"); err != nil {
		return
	}
	if err := rc.Flush(); err != nil {
		return
	}
	ping := time.NewTicker(ssePing)
	defer ping.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-f.done:
			return
		case <-ping.C:
			if _, err := fmt.Fprint(w, ": ping\n\n"); err != nil {
				return
			}
		case e := <-ch:
			data, err := json.Marshal(e.Data)
			if err != nil {
				f.log.Warn().Err(err).Str("kind", e.Kind).Msg("encode live event")
				continue
			}
			if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", e.Kind, data); err != nil {
				return
			}
		}
		if err := rc.Flush(); err != nil {
			return
		}
	}
}
