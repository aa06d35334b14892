package api

import (
	"bytes"
	"encoding/json"
	"errors"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// DecodeStrict decodes exactly one JSON document into v, refusing fields v
// does not have so that a misspelt field is not silently ignored, and
// naming the line and column of a syntax or type error.
func DecodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return protocol.DescribeJSONError(data, dec.InputOffset(), err)
	}
	if dec.More() {
		return errors.New("trailing data after the JSON document")
	}
	return nil
}
