// Package sweepfile reads a sweep as a user writes it, in JSON or in YAML,
// and checks it. A sweep is checked in two steps. Check is everything a
// sweep says about itself (its workload, the ids it names, its power
// settings as written): anyone holding the sweep can take it, and the CLI
// (before sending), the API (on receipt, through Decode) and the
// controller's scheduler (for callers in its process) all take this one.
// What needs the fleet (the agents it names have announced themselves,
// the deployments it selects are offered, the agents can take its power
// settings) only the controller can check, when it fits the sweep to its
// agents. The decoders' errors are the API's: *api.BadSweepError, holding
// api.SweepInputErrors for a YAML file, with each problem's line, column
// and field. The client does not link this package, nor the YAML decoder.
package sweepfile

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// Decode reads a sweep request. Workload fields left out take the
// method's defaults (protocol.DefaultWorkload), or with a profile the
// default profile's (protocol.DefaultProfileWorkload); unknown fields are refused
// so that a misspelt field is not silently ignored. The sweep is checked.
// A body {"yaml": "..."} carries a sweep file in YAML (DecodeYAML).
func Decode(data []byte) (protocol.Sweep, error) {
	if y, ok := yamlEnvelope(data); ok {
		return DecodeYAML([]byte(y))
	}
	s := protocol.Sweep{Workload: protocol.DefaultWorkload()}
	if hasProfile(data) {
		// A profile measures no camera ladder: their defaults would be
		// refused beside it. The profile's fields left out take
		// DefaultProfile's, decoded into.
		s.Workload = protocol.DefaultProfileWorkload()
	}
	if err := api.DecodeStrict(data, &s); err != nil {
		return protocol.Sweep{}, &api.BadSweepError{Err: fmt.Errorf("sweep: %w", err)}
	}
	if err := Check(s); err != nil {
		return protocol.Sweep{}, err
	}
	return s, nil
}

// hasProfile reports whether a sweep's JSON has a workload.profile that is
// not null; a document that does not decode so has none (api.DecodeStrict
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

// Check is the first step of checking a sweep: what a client may set in
// it, which needs no fleet. Its error is an *api.BadSweepError whose
// message starts with the field it is about.
func Check(s protocol.Sweep) error {
	if err := s.Workload.Validate(); err != nil {
		return &api.BadSweepError{Err: err}
	}
	for i, a := range s.Agents {
		if err := protocol.ValidateAgentID(a); err != nil {
			return api.BadSweepf("agents[%d]: %v", i, err)
		}
	}
	for i, d := range s.Deployments {
		if strings.TrimSpace(d) == "" {
			return api.BadSweepf("deployments[%d]: empty deployment id", i)
		}
	}
	if err := protocol.ValidateLabels("agent_labels", s.AgentLabels); err != nil {
		return &api.BadSweepError{Err: err}
	}
	if len(s.Name) > 200 {
		return api.BadSweepf("name: %d characters, at most 200", len(s.Name))
	}
	return checkPower(s.PowerModes, s.PowerLimitsW)
}
