package sweepfile

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"slices"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"

	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// badSweepInput is the sweep file's problems as the API's 400, sorted by
// position (those without one last) and cut to maxSweepErrors.
func badSweepInput(errs ...*api.SweepInputError) error {
	sorted := slices.Clone(errs)
	slices.SortStableFunc(sorted, func(a, b *api.SweepInputError) int {
		if (a.Line == 0) != (b.Line == 0) {
			return cmp.Compare(b.Line, a.Line)
		}
		return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Column, b.Column))
	})
	if len(sorted) > maxSweepErrors {
		sorted = sorted[:maxSweepErrors]
	}
	return &api.BadSweepError{Err: api.SweepInputErrors(sorted)}
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
	if err := api.DecodeStrict(data, &b); err != nil {
		return "", false
	}
	return b.YAML, true
}

// DecodeYAML reads a sweep file in YAML as Decode reads JSON: fields left
// out take the method's defaults, unknown fields are refused, and the
// sweep is checked (Check). Its error is an *api.BadSweepError holding
// api.SweepInputErrors: every unknown field (with the field it likely
// meant) and every value of the wrong kind, up to maxSweepErrors, and when
// the file could be decoded despite its unknown fields, what the decoder
// or Check then finds; each with its line and column when known. A file
// past the limits of checkSweepYAML is refused before the parser sees it.
func DecodeYAML(data []byte) (protocol.Sweep, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return protocol.Sweep{}, badSweepInput(&api.SweepInputError{Err: errors.New("the YAML is empty")})
	}
	if err := checkSweepYAML(data); err != nil {
		in, ok := err.(*api.SweepInputError)
		if !ok {
			in = &api.SweepInputError{Err: err}
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
	if err := Check(s); err != nil {
		in := &api.SweepInputError{Err: err}
		in.Field = api.MessageField(err.Error())
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
func decodeSweepBody(data []byte, body ast.Node, opts []yaml.DecodeOption) (protocol.Sweep, *yamlProfile, *api.SweepInputError) {
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
func decoderInput(err error) *api.SweepInputError {
	in := &api.SweepInputError{Err: errors.New(yamlMessage(err))}
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
