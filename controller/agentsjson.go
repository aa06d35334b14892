package controller

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"reflect"
	"sync"

	"github.com/vlmfleet/vlmfleet/controller/api"
)

// agentsJSON writes the agents list (GET /api/agents) byte for byte as
// api.WriteJSON would, from each agent's encoding kept until its view changes.
// Encoding a thousand agents took most of the answer's time; between two
// requests only the agents whose heartbeat, hello or drain came in have
// changed, and only they are encoded again.
type agentsJSON struct {
	mu   sync.Mutex
	byID map[string]*encodedAgent
}

type encodedAgent struct {
	view api.AgentView
	// data is the view as an element of api.WriteJSON's indented array; it
	// is replaced, never changed, so a request may write it unlocked.
	data []byte
}

func (c *Controller) serveAgents(w http.ResponseWriter, r *http.Request) {
	views, err := c.Agents(r.Context())
	var parts [][]byte
	if err == nil {
		parts, err = c.agentsJSON.encode(views)
	}
	if err != nil {
		api.WriteError(w, statusOf(err), err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	// In large writes: the server's own buffer (4 KiB) made a system call
	// of each 4 KiB; with the writing around them, two fifths of the
	// answer's CPU at a thousand agents.
	bw := bufio.NewWriterSize(w, 64<<10)
	for _, p := range parts {
		if _, err := bw.Write(p); err != nil {
			return // the client went away
		}
	}
	_ = bw.Flush()
}

// Between the elements of api.WriteJSON's indented array, and around them.
var (
	agentsOpen  = []byte("[\n  ")
	agentsSep   = []byte(",\n  ")
	agentsClose = []byte("\n]\n")
	agentsEmpty = []byte("[]\n")
)

// encode returns, in parts, what json.Encoder with api.WriteJSON's indent
// writes for views.
func (e *agentsJSON) encode(views []api.AgentView) ([][]byte, error) {
	if len(views) == 0 {
		return [][]byte{agentsEmpty}, nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.byID == nil {
		e.byID = map[string]*encodedAgent{}
	}
	parts := make([][]byte, 0, 2*len(views)+1)
	parts = append(parts, agentsOpen)
	for i := range views {
		v := &views[i]
		enc, ok := e.byID[v.ID]
		if !ok || !sameValue(reflect.ValueOf(&enc.view).Elem(), reflect.ValueOf(v).Elem()) {
			data, err := json.MarshalIndent(v, "  ", "  ")
			if err != nil {
				return nil, fmt.Errorf("controller: encode agent %s: %w", v.ID, err)
			}
			enc = &encodedAgent{view: *v, data: data}
			e.byID[v.ID] = enc
		}
		if i > 0 {
			parts = append(parts, agentsSep)
		}
		parts = append(parts, enc.data)
	}
	return append(parts, agentsClose), nil
}

// sameValue reports whether a and b (of one type) certainly encode the
// same. Slices, maps and pointers count as the same when they share their
// memory: a view's come from the store's record of the agent, which a
// write replaces and never changes in place. Any field added to the view
// is compared too, whatever fills it. False is always safe: it costs an
// encoding. It reads fields as reflect allows for unexported ones too
// (time.Time's), and allocates nothing.
func sameValue(a, b reflect.Value) bool {
	switch a.Kind() {
	case reflect.Bool:
		return a.Bool() == b.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return a.Int() == b.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return a.Uint() == b.Uint()
	case reflect.Float32, reflect.Float64:
		return math.Float64bits(a.Float()) == math.Float64bits(b.Float()) // -0 is not 0 in JSON
	case reflect.String:
		return a.String() == b.String()
	case reflect.Pointer:
		return a.UnsafePointer() == b.UnsafePointer()
	case reflect.Slice, reflect.Map:
		return a.Len() == b.Len() && a.UnsafePointer() == b.UnsafePointer()
	case reflect.Struct:
		for i := range a.NumField() {
			if !sameValue(a.Field(i), b.Field(i)) {
				return false
			}
		}
		return true
	case reflect.Array:
		for i := range a.Len() {
			if !sameValue(a.Index(i), b.Index(i)) {
				return false
			}
		}
		return true
	case reflect.Interface:
		return a.IsNil() && b.IsNil()
	}
	return false
}
