package received

import (
	"sync"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// HeaderCache remembers the run headers of result messages by their bytes.
// Every result message carries its run's header (a few kilobytes: the
// workload, the engine's command, the device's facts), the same bytes in
// every message of a run; a header met before is not decoded again. It is
// safe for use by several goroutines. The protocol.Run it hands out is
// shared by every message with that header, so its maps and slices are
// read only.
type HeaderCache struct {
	mu   sync.Mutex
	most int
	runs map[string]protocol.Run
}

// NewHeaderCache remembers up to most headers: enough for the runs whose
// results arrive together (one per agent measuring), forgotten all at
// once when full.
func NewHeaderCache(most int) *HeaderCache {
	return &HeaderCache{most: most, runs: map[string]protocol.Run{}}
}

// decode decodes a header's bytes, or returns the protocol.Run they decoded to
// before.
func (c *HeaderCache) decode(raw []byte) (protocol.Run, error) {
	c.mu.Lock()
	r, ok := c.runs[string(raw)]
	c.mu.Unlock()
	if ok {
		return r, nil
	}
	if err := jsonv2.Unmarshal(raw, &r); err != nil {
		return protocol.Run{}, err
	}
	c.mu.Lock()
	if len(c.runs) >= c.most {
		clear(c.runs)
	}
	c.runs[string(raw)] = r
	c.mu.Unlock()
	return r, nil
}

// headerWire is a result message's run header, decoded through its
// cache when it has one (set before the message is decoded).
type headerWire struct {
	cache *HeaderCache
	run   protocol.Run
}

// UnmarshalJSONFrom reads the header, through the cache if there is one.
func (h *headerWire) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	if h.cache == nil {
		return jsonv2.UnmarshalDecode(dec, &h.run)
	}
	v, err := dec.ReadValue()
	if err != nil {
		return err
	}
	if h.run, err = h.cache.decode(v); err != nil {
		return placeError(err, dec.InputOffset()-int64(len(v)), dec.StackPointer())
	}
	return nil
}
