package controller

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"sync"

	"github.com/vlmfleet/vlmfleet/controller/api"
)

// agentsJSON writes the agents list (GET /api/agents) byte for byte as
// writeJSON would, from each agent's encoding kept until its view changes.
// Encoding a thousand agents took most of the answer's time; between two
// requests only the agents whose heartbeat, hello or drain came in have
// changed, and only they are encoded again.
type agentsJSON struct {
	mu   sync.Mutex
	byID map[string]encodedAgent
	// size is the last answer's, to make room for the next at once.
	size int
}

type encodedAgent struct {
	view api.AgentView
	// data is the view as an element of writeJSON's indented array.
	data []byte
}

func (c *Controller) serveAgents(w http.ResponseWriter, r *http.Request) {
	views, err := c.Agents(r.Context())
	var body []byte
	if err == nil {
		body, err = c.agentsJSON.encode(views)
	}
	if err != nil {
		writeError(w, statusOf(err), err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

// encode is what json.Encoder with writeJSON's indent writes for views.
func (e *agentsJSON) encode(views []api.AgentView) ([]byte, error) {
	if len(views) == 0 {
		return []byte("[]\n"), nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.byID == nil {
		e.byID = map[string]encodedAgent{}
	}
	var buf bytes.Buffer
	buf.Grow(e.size + e.size/8)
	buf.WriteString("[\n  ")
	for i, v := range views {
		enc, ok := e.byID[v.ID]
		if !ok || !sameValue(reflect.ValueOf(enc.view), reflect.ValueOf(v)) {
			data, err := json.MarshalIndent(v, "  ", "  ")
			if err != nil {
				return nil, fmt.Errorf("controller: encode agent %s: %w", v.ID, err)
			}
			enc = encodedAgent{view: v, data: data}
			e.byID[v.ID] = enc
		}
		if i > 0 {
			buf.WriteString(",\n  ")
		}
		buf.Write(enc.data)
	}
	buf.WriteString("\n]\n")
	e.size = buf.Len()
	return buf.Bytes(), nil
}

// sameValue reports whether a and b (of one type) certainly encode the
// same. Slices, maps and pointers count as the same when they share their
// memory: a view's come from the store's record of the agent, which a
// write replaces and never changes in place. Any field added to the view
// is compared too, whatever fills it. False is always safe: it costs an
// encoding.
func sameValue(a, b reflect.Value) bool {
	if a.Type().Comparable() {
		return a.Equal(b)
	}
	switch a.Kind() {
	case reflect.Struct:
		for i := range a.NumField() {
			if !sameValue(a.Field(i), b.Field(i)) {
				return false
			}
		}
		return true
	case reflect.Slice, reflect.Map:
		return a.Len() == b.Len() && a.UnsafePointer() == b.UnsafePointer()
	case reflect.Array:
		for i := range a.Len() {
			if !sameValue(a.Index(i), b.Index(i)) {
				return false
			}
		}
		return true
	}
	return false
}
