package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// DecodeSweep reads a sweep request. Workload fields left out take the
// method's defaults (protocol.DefaultWorkload), or with a profile the
// default profile's (protocol.DefaultProfileWorkload); unknown fields are refused
// so that a misspelt field is not silently ignored. The sweep is validated.
// A body {"yaml": "..."} carries a sweep file in YAML (DecodeSweepYAML).
func DecodeSweep(data []byte) (protocol.Sweep, error) {
	if y, ok := yamlEnvelope(data); ok {
		return DecodeSweepYAML([]byte(y))
	}
	s := protocol.Sweep{Workload: protocol.DefaultWorkload()}
	if hasProfile(data) {
		// A profile measures no camera ladder: their defaults would be
		// refused beside it. The profile's fields left out take
		// DefaultProfile's, decoded into.
		s.Workload = protocol.DefaultProfileWorkload()
	}
	if err := decodeStrict(data, &s, true); err != nil {
		return protocol.Sweep{}, &BadSweepError{Err: fmt.Errorf("sweep: %w", err)}
	}
	if err := ValidateSweep(s); err != nil {
		return protocol.Sweep{}, err
	}
	return s, nil
}

// hasProfile reports whether a sweep's JSON has a workload.profile that is
// not null; a document that does not decode so has none (decodeStrict
// then says what is wrong with it).
func hasProfile(data []byte) bool {
	var probe struct {
		Workload struct {
			Profile json.RawMessage `json:"profile"`
		} `json:"workload"`
	}
	if json.Unmarshal(data, &probe) != nil {
		return false
	}
	p := bytes.TrimSpace(probe.Workload.Profile)
	return len(p) > 0 && !bytes.Equal(p, []byte("null"))
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

// BadSweepError says the sweep itself is wrong (an invalid field, nothing
// selected); the API answers it with 400.
type BadSweepError struct{ Err error }

func (e *BadSweepError) Error() string { return e.Err.Error() }
func (e *BadSweepError) Unwrap() error { return e.Err }

// BadSweepf is a *BadSweepError of the formatted message.
func BadSweepf(format string, args ...any) error {
	return &BadSweepError{Err: fmt.Errorf(format, args...)}
}

// ValidateSweep checks what a client may set in a sweep.
func ValidateSweep(s protocol.Sweep) error {
	if err := s.Workload.Validate(); err != nil {
		return &BadSweepError{Err: err}
	}
	for i, a := range s.Agents {
		if err := protocol.ValidateAgentID(a); err != nil {
			return BadSweepf("agents[%d]: %v", i, err)
		}
	}
	for i, d := range s.Deployments {
		if strings.TrimSpace(d) == "" {
			return BadSweepf("deployments[%d]: empty deployment id", i)
		}
	}
	if err := protocol.ValidateLabels("agent_labels", s.AgentLabels); err != nil {
		return &BadSweepError{Err: err}
	}
	if len(s.Name) > 200 {
		return BadSweepf("name: %d characters, at most 200", len(s.Name))
	}
	return validateSweepPower(s.PowerModes, s.PowerLimitsW)
}
