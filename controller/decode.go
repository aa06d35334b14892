package controller

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/vlmfleet/vlmfleet/controller/store"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// Request body limits of the API; clients check them before sending. An
// import is also bounded per document (MaxImportDocument).
const (
	MaxSweepBody  = 1 << 20
	MaxImportBody = 64 << 20
)

// DecodeSweep reads a sweep request. Workload fields left out take the
// method's defaults (protocol.DefaultWorkload); unknown fields are refused
// so that a misspelt field is not silently ignored. The sweep is validated.
// A body {"yaml": "..."} carries a sweep file in YAML (DecodeSweepYAML).
func DecodeSweep(data []byte) (protocol.Sweep, error) {
	if y, ok := yamlEnvelope(data); ok {
		return DecodeSweepYAML([]byte(y))
	}
	s := protocol.Sweep{Workload: protocol.DefaultWorkload()}
	if err := decodeStrict(data, &s, true); err != nil {
		return protocol.Sweep{}, &BadSweepError{Err: fmt.Errorf("sweep: %w", err)}
	}
	if err := ValidateSweep(s); err != nil {
		return protocol.Sweep{}, err
	}
	return s, nil
}

// ImportRequest is the body of POST /api/runs/import.
type ImportRequest struct {
	Runs []store.ImportEntry `json:"runs"`
}

// DecodeImportRequest reads an import body held in memory, as
// DecodeImportStream does.
func DecodeImportRequest(data []byte) ([]store.ImportEntry, error) {
	return DecodeImportStream(bytes.NewReader(data))
}

// decodeStrict decodes exactly one JSON document, naming line and column
// of a syntax or type error.
func decodeStrict(data []byte, v any, disallowUnknown bool) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	if disallowUnknown {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(v); err != nil {
		return protocol.DescribeJSONError(data, dec.InputOffset(), err)
	}
	if dec.More() {
		return errors.New("trailing data after the JSON document")
	}
	return nil
}
