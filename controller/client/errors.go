package client

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"unicode"
)

// ErrNotFound matches (errors.Is) an *APIError with status 404: an unknown
// id, or an endpoint this controller does not have.
var ErrNotFound = errors.New("not found")

// APIError is an answer of the controller other than the one asked for.
// Message is the server's {"error": ...}, or the start of a body that is
// not one (a proxy's page, say).
type APIError struct {
	Status  int
	Message string
	// Line, Column and Field say where a sweep's problem is, when the
	// controller knows: the line and column (1-based) in the YAML sent,
	// the field's path (workload.cameras[2], power_modes[1]). Zero and
	// empty when it does not.
	Line, Column int
	Field        string
}

func (e *APIError) Error() string {
	s := fmt.Sprintf("controller answered %d", e.Status)
	if t := http.StatusText(e.Status); t != "" {
		s += " " + t
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	if e.Status == http.StatusUnauthorized {
		s += " (" + TokenHint + ")"
	}
	if e.Status == http.StatusBadRequest && strings.Contains(e.Message, "HTTP request to an HTTPS server") {
		s += " (" + HTTPSHint + ")"
	}
	return s
}

// Is lets errors.Is(err, ErrNotFound) test for a 404.
func (e *APIError) Is(target error) bool {
	return target == ErrNotFound && e.Status == http.StatusNotFound
}

// maxOtherBody is how much of a body that is not the API's error document
// makes it into the message.
const maxOtherBody = 512

// decodeError reads an error answer: the API's {"error": "..."}, or else
// the body's start, made printable.
func decodeError(status int, body []byte) *APIError {
	var doc struct {
		Error  string `json:"error"`
		Line   int    `json:"line"`
		Column int    `json:"column"`
		Field  string `json:"field"`
	}
	if json.Unmarshal(body, &doc) == nil && strings.TrimSpace(doc.Error) != "" {
		return &APIError{Status: status, Message: doc.Error, Line: max(doc.Line, 0), Column: max(doc.Column, 0), Field: doc.Field}
	}
	msg := bytes.TrimSpace(body)
	cut := len(msg) > maxOtherBody
	if cut {
		msg = msg[:maxOtherBody]
	}
	// One line of printable text: the message ends up in a terminal.
	s := strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(string(msg), "\uFFFD"))
	s = strings.Join(strings.Fields(s), " ")
	if cut {
		s += " …"
	}
	return &APIError{Status: status, Message: s}
}
