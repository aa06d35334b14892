package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/parser"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// SweepInputError is a sweep that cannot be decoded or validated, with
// where the problem is when the decoder or the validator knows it: the
// line and column (1-based, 0 when unknown) in the YAML the user wrote and
// the field's path (workload.cameras[2]). The API adds these to its error
// answer, so that a page can show the message at its line.
type SweepInputError struct {
	Line, Column int
	Field        string
	Err          error
}

func (e *SweepInputError) Error() string { return e.Err.Error() }
func (e *SweepInputError) Unwrap() error { return e.Err }

// sweepYAMLBody is the YAML form of POST /api/sweeps: the API takes JSON
// only (so that a page of another site cannot send a change without a
// preflight), and a sweep file in YAML travels as one JSON string.
type sweepYAMLBody struct {
	YAML string `json:"yaml"`
}

// yamlEnvelope reports whether data is {"yaml": "..."} and returns the YAML.
// A sweep has no field "yaml", so this cannot take a sweep for it.
func yamlEnvelope(data []byte) (string, bool) {
	var probe map[string]json.RawMessage
	if json.Unmarshal(data, &probe) != nil {
		return "", false
	}
	if _, ok := probe["yaml"]; !ok || len(probe) != 1 {
		return "", false
	}
	var b sweepYAMLBody
	if err := decodeStrict(data, &b, true); err != nil {
		return "", false
	}
	return b.YAML, true
}

// DecodeSweepYAML reads a sweep file in YAML as DecodeSweep reads JSON:
// fields left out take the method's defaults, unknown fields are refused,
// and the sweep is validated. Its errors are *SweepInputError (and
// *BadSweepError) with the line of the problem when it is known: the
// decoder's own position, or the line of the field a validation error
// names. A file past the limits of checkSweepYAML is refused before the
// parser sees it.
func DecodeSweepYAML(data []byte) (protocol.Sweep, error) {
	s := protocol.Sweep{Workload: protocol.DefaultWorkload()}
	if len(bytes.TrimSpace(data)) == 0 {
		return protocol.Sweep{}, &BadSweepError{Err: &SweepInputError{Err: errors.New("sweep: the YAML is empty")}}
	}
	if err := checkSweepYAML(data); err != nil {
		return protocol.Sweep{}, &BadSweepError{Err: err}
	}
	if err := yaml.UnmarshalWithOptions(data, &s, yaml.DisallowUnknownField()); err != nil {
		in := &SweepInputError{Err: fmt.Errorf("sweep: %s", yamlMessage(err))}
		var ye yaml.Error
		if errors.As(err, &ye) && ye.GetToken() != nil && ye.GetToken().Position != nil {
			in.Line, in.Column = ye.GetToken().Position.Line, ye.GetToken().Position.Column
			in.Err = fmt.Errorf("sweep: line %d: %s", in.Line, yamlMessage(err))
		}
		return protocol.Sweep{}, &BadSweepError{Err: in}
	}
	if err := ValidateSweep(s); err != nil {
		in := &SweepInputError{Err: err}
		in.Field = fieldOf(err.Error())
		in.Line, in.Column = yamlPosition(data, in.Field)
		return protocol.Sweep{}, &BadSweepError{Err: in}
	}
	return s, nil
}

// yamlMessage is the decoder's message without its source excerpt, which
// the page shows itself.
func yamlMessage(err error) string {
	var ye yaml.Error
	if errors.As(err, &ye) {
		return ye.GetMessage()
	}
	return err.Error()
}

// fieldPrefix matches the field a validation message starts with:
// "workload.cameras[2]: ..." (protocol and ValidateSweep name fields so).
var fieldPrefix = regexp.MustCompile(`^([a-z_]+(?:\.[a-z_]+|\[[0-9]+\])*): `)

func fieldOf(msg string) string {
	if m := fieldPrefix.FindStringSubmatch(msg); m != nil {
		return m[1]
	}
	return ""
}

// yamlPosition finds where field is written in data: the field itself, or
// the nearest enclosing field written there (a field left out has no line
// of its own). 0, 0 when nothing is found.
func yamlPosition(data []byte, field string) (line, column int) {
	if field == "" {
		return 0, 0
	}
	f, err := parser.ParseBytes(data, 0)
	if err != nil {
		return 0, 0
	}
	for p := field; p != ""; p = parentField(p) {
		path, err := yaml.PathString("$." + p)
		if err != nil {
			continue
		}
		n, err := path.FilterFile(f)
		if err != nil || n == nil || n.GetToken() == nil || n.GetToken().Position == nil {
			continue
		}
		pos := n.GetToken().Position
		return pos.Line, pos.Column
	}
	return 0, 0
}

// parentField: workload.cameras[2] → workload.cameras → workload → "".
func parentField(p string) string {
	if i := strings.LastIndexAny(p, ".["); i > 0 {
		return p[:i]
	}
	return ""
}

// ErrorBody is the JSON of an error answer: {"error": message}, with the
// line, column and field of a sweep's problem when they are known (added
// fields, so that clients reading only "error" read what they did).
func ErrorBody(err error) map[string]any {
	body := map[string]any{"error": err.Error()}
	var in *SweepInputError
	var bad *BadSweepError
	switch {
	case errors.As(err, &in):
		if in.Line > 0 {
			body["line"] = in.Line
			body["column"] = in.Column
		}
		if in.Field != "" {
			body["field"] = in.Field
		}
	case errors.As(err, &bad):
		// A sweep sent as JSON, or refused when scheduled (a deployment no
		// agent offers): the field its message names, without a line.
		if f := fieldOf(err.Error()); f != "" {
			body["field"] = f
		}
	}
	return body
}
