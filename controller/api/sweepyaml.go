package api

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
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

// Located is the message after its position: "line 3 column 5: ...".
func (e *SweepInputError) Located() string {
	if e.Line <= 0 {
		return e.Error()
	}
	return fmt.Sprintf("line %d column %d: %s", e.Line, e.Column, e.Error())
}

// SweepInputErrors are the problems of one sweep file, in the order of
// the file, at most maxSweepErrors of them.
type SweepInputErrors []*SweepInputError

// Error is each problem on a line of its own, after its position, the
// first after "sweep: " as every refused sweep's message starts.
func (es SweepInputErrors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Located()
	}
	return "sweep: " + strings.Join(lines, "\n")
}

// Unwrap lets errors.As find the first problem as a *SweepInputError.
func (es SweepInputErrors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// badSweepInput is the sweep file's problems as the API's 400, sorted by
// position (those without one last) and cut to maxSweepErrors.
func badSweepInput(errs ...*SweepInputError) error {
	sorted := slices.Clone(errs)
	slices.SortStableFunc(sorted, func(a, b *SweepInputError) int {
		if (a.Line == 0) != (b.Line == 0) {
			return cmp.Compare(b.Line, a.Line)
		}
		return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Column, b.Column))
	})
	if len(sorted) > maxSweepErrors {
		sorted = sorted[:maxSweepErrors]
	}
	return &BadSweepError{Err: SweepInputErrors(sorted)}
}

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
// and the sweep is validated. Its error is a *BadSweepError holding
// SweepInputErrors: every unknown field (with the field it likely meant)
// and every value of the wrong kind, up to maxSweepErrors, and when the
// file could be decoded despite its unknown fields, what the decoder or
// the validator then finds; each with its line and column when known. A
// file past the limits of checkSweepYAML is refused before the parser
// sees it.
func DecodeSweepYAML(data []byte) (protocol.Sweep, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return protocol.Sweep{}, badSweepInput(&SweepInputError{Err: errors.New("the YAML is empty")})
	}
	if err := checkSweepYAML(data); err != nil {
		in, ok := err.(*SweepInputError)
		if !ok {
			in = &SweepInputError{Err: err}
		}
		return protocol.Sweep{}, badSweepInput(in)
	}
	f, err := parser.ParseBytes(data, 0)
	if err != nil {
		return protocol.Sweep{}, badSweepInput(decoderInput(err))
	}
	var body ast.Node
	if len(f.Docs) > 0 {
		body = f.Docs[0].Body
	}
	shape := checkSweepShape(body)
	errs := shape.errs
	if shape.typed {
		return protocol.Sweep{}, badSweepInput(errs...)
	}
	var opts []yaml.DecodeOption
	if len(errs) == 0 {
		// What the walk did not see, the decoder still refuses.
		opts = append(opts, yaml.DisallowUnknownField())
	}
	s, yp, in := decodeSweepBody(data, body, opts)
	if in != nil {
		return protocol.Sweep{}, badSweepInput(append(errs, in)...)
	}
	if err := ValidateSweep(s); err != nil {
		in := &SweepInputError{Err: err}
		in.Field = fieldOf(err.Error())
		if yf := yamlProfileField(in.Field, yp); yf != in.Field {
			// The profile's fields as the file writes them: osl[1], not
			// lengths[1].osl.
			in.Err = errors.New(yf + strings.TrimPrefix(err.Error(), in.Field))
			in.Field = yf
		}
		in.Line, in.Column = yamlPosition(data, in.Field)
		errs = append(errs, in)
	}
	if len(errs) > 0 {
		return protocol.Sweep{}, badSweepInput(errs...)
	}
	return s, nil
}

// decodeSweepBody decodes a sweep file that the shape walk let through:
// the method's defaults with the file on top, or for a workload with a
// profile (decodeProfileSweep), the default profile's, with the profile
// as the file wrote it.
func decodeSweepBody(data []byte, body ast.Node, opts []yaml.DecodeOption) (protocol.Sweep, *yamlProfile, *SweepInputError) {
	if prof := profileNode(body); prof != nil {
		s, yp, in := decodeProfileSweep(body, prof, opts)
		if in != nil && in.Line == 0 {
			in.Line, in.Column = yamlPosition(data, in.Field)
		}
		return s, yp, in
	}
	s := protocol.Sweep{Workload: protocol.DefaultWorkload()}
	if err := yaml.UnmarshalWithOptions(data, &s, opts...); err != nil {
		return protocol.Sweep{}, nil, decoderInput(err)
	}
	return s, nil, nil
}

// decoderInput is the decoder's error at its position.
func decoderInput(err error) *SweepInputError {
	in := &SweepInputError{Err: errors.New(yamlMessage(err))}
	var ye yaml.Error
	if errors.As(err, &ye) && ye.GetToken() != nil && ye.GetToken().Position != nil {
		in.Line, in.Column = ye.GetToken().Position.Line, ye.GetToken().Position.Column
	}
	return in
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
// line, column and field of a sweep's first problem when they are known
// (added fields, so that clients reading only "error" read what they
// did), and for a sweep file, "errors": each problem with its own line,
// column, field and message without its position, for a page to place.
func ErrorBody(err error) map[string]any {
	body := map[string]any{"error": err.Error()}
	var list SweepInputErrors
	var in *SweepInputError
	var bad *BadSweepError
	switch {
	case errors.As(err, &in):
		addPosition(body, in)
		if errors.As(err, &list) {
			probs := make([]map[string]any, len(list))
			for i, e := range list {
				probs[i] = map[string]any{"error": e.Error()}
				addPosition(probs[i], e)
			}
			body["errors"] = probs
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

func addPosition(m map[string]any, in *SweepInputError) {
	if in.Line > 0 {
		m["line"] = in.Line
		m["column"] = in.Column
	}
	if in.Field != "" {
		m["field"] = in.Field
	}
}
