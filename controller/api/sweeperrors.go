package api

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// BadSweepError says the sweep itself is wrong (an invalid field, nothing
// selected); the API answers it with 400.
type BadSweepError struct{ Err error }

func (e *BadSweepError) Error() string { return e.Err.Error() }
func (e *BadSweepError) Unwrap() error { return e.Err }

// BadSweepf is a *BadSweepError of the formatted message.
func BadSweepf(format string, args ...any) error {
	return &BadSweepError{Err: fmt.Errorf(format, args...)}
}

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
// the file, as many as the decoder reports at once.
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

// fieldPrefix matches the field a validation message starts with:
// "workload.cameras[2]: ..." (protocol and the sweep's checks name fields
// so).
var fieldPrefix = regexp.MustCompile(`^([a-z_]+(?:\.[a-z_]+|\[[0-9]+\])*): `)

// MessageField is the field a refusal's message starts with
// ("workload.cameras[2]" of "workload.cameras[2]: ..."), or "".
func MessageField(msg string) string {
	if m := fieldPrefix.FindStringSubmatch(msg); m != nil {
		return m[1]
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
		if f := MessageField(err.Error()); f != "" {
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
