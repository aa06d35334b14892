// Package received decodes result messages as the controller takes them
// in and reads back the records it stores from them. It is the
// controller's side only: agents write result messages with package
// protocol, which holds the wire contract both sides share.
package received

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// Result is a result message decoded for storing. The controller keeps a
// combination's telemetry series and request records as the JSON they
// came in: decoding a series into samples (maps of rails and fields) and
// encoding it again cost most of what storing a result cost, and the
// controller reads nothing in it. The series is checked to decode as
// []protocol.TelemetrySample and the requests are decoded and validated,
// so what is stored reads back as what was checked (DecodeCombination,
// DecodeSeries, DecodeRequests).
type Result struct {
	// ResultMessage is the message. Its Combination, if any, has no
	// TelemetrySeries (it is in Series) and has its Requests decoded.
	protocol.ResultMessage
	// Series is the combination's telemetry_series as it came: a JSON
	// array, or nil when it had none. It and Requests are parts of the
	// message decoded, not copies.
	Series []byte
	// Requests is the combination's requests as they came: a JSON array,
	// or nil when it had none.
	Requests []byte
}

// Result messages and the records stored from them are read with
// encoding/json/v2's defaults: field names match exactly, and a duplicate
// name or invalid UTF-8 is an error, so that a stored series or record has
// one reading, the one it was checked in.

// Decode reads a result message and validates it as
// protocol.ResultMessage.Validate does, keeping its combination's series
// and request records as they came (see Result); data may be compressed
// (protocol.CompressPayload). Its error names the line, column and field
// of what was wrong. headers, if not nil, remembers the run headers
// decoded, for the next messages of their runs.
func Decode(data []byte, headers *HeaderCache) (*Result, error) {
	const what = "result message"
	if len(data) > protocol.MaxMessageBytes {
		return nil, fmt.Errorf("%s: %d bytes, more than the %d allowed", what, len(data), protocol.MaxMessageBytes)
	}
	js, err := protocol.Uncompress(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if m, ok := decodeCut(js, headers); ok {
		return m, nil
	}
	m, err := decodeReceived(js, headers, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return m, nil
}

// decodeCut decodes a message whose series cutSeries checked without the
// decoder reading the series again: it reads a copy of the message with
// "[]" in the series' place. The decoder's check of that copy and the
// quick check of the series together are the decoder's check of the
// message. Anything that does not go so (an error, the placeholder not
// where the decoder finds the series) is answered by decoding the message
// as it is, so that errors read as they always did.
func decodeCut(js []byte, headers *HeaderCache) (*Result, bool) {
	start, end, ok := cutSeries(js)
	if !ok {
		return nil, false
	}
	doc := make([]byte, 0, len(js)-(end-start)+2)
	doc = append(append(append(doc, js[:start]...), "[]"...), js[end:]...)
	cut := &seriesCut{start: int64(start), series: js[start:end]}
	if string(cut.series) == "null" {
		cut.series = nil
	}
	m, err := decodeReceived(doc, headers, cut)
	if err != nil || !cut.placed {
		return nil, false
	}
	return m, true
}

// seriesCut is a message's series, cut out of it at offset start before
// it was decoded (decodeCut). placed says that the decoder found the
// placeholder there, as the combination's telemetry_series.
type seriesCut struct {
	start  int64
	series []byte
	placed bool
}

// errCutMisplaced says that the decoder found the combination's series
// elsewhere than cutSeries cut it out: decodeCut then decodes the message
// as it came.
var errCutMisplaced = errors.New("the series is not where it was cut")

// decodeReceived decodes a result message, its series cut out if cut is
// not nil.
func decodeReceived(data []byte, headers *HeaderCache, cut *seriesCut) (*Result, error) {
	// The series and requests are cut from data by the decoder's offsets.
	w := resultWire{Combination: &combinationWire{in: data, cut: cut}, Run: headerWire{cache: headers}}
	if err := jsonv2.Unmarshal(data, &w); err != nil {
		return nil, describeV2Error(data, err)
	}
	if w.Combination != nil && !w.Combination.seen {
		w.Combination = nil // the message has none
	}
	m := &Result{ResultMessage: protocol.ResultMessage{
		Schema: w.Schema, AgentID: w.AgentID, Run: w.Run.run, Final: w.Final, Expected: w.Expected,
	}}
	if c := w.Combination; c != nil {
		comb := c.Combination
		comb.TelemetrySeries, comb.Requests = nil, c.Requests.records
		m.Combination = &comb
		m.Series, m.Requests = c.TelemetrySeries.raw, c.Requests.raw
	}
	if s := m.Schema; s < 1 || s > protocol.SchemaVersion {
		return nil, fmt.Errorf("schema %d, this build reads schema 1..%d", s, protocol.SchemaVersion)
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return m, nil
}

// resultWire is protocol.ResultMessage as Decode reads it.
type resultWire struct {
	Schema      int              `json:"schema"`
	AgentID     string           `json:"agent_id"`
	Run         headerWire       `json:"run"`
	Combination *combinationWire `json:"combination"`
	Final       bool             `json:"final"`
	Expected    int              `json:"expected"`
}

// combinationWire is a protocol.Combination whose series and requests are kept as
// they came: its own fields take their names from the embedded ones. in
// is the message being decoded, set before it is, which the raw parts are
// cut from; seen says that the message had a combination.
type combinationWire struct {
	protocol.Combination
	TelemetrySeries rawSeries   `json:"telemetry_series"`
	Requests        rawRequests `json:"requests"`
	in              []byte
	cut             *seriesCut
	seen            bool
}

// UnmarshalJSONFrom decodes the combination as a struct of its fields.
func (w *combinationWire) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	type fields combinationWire // the same fields without this method
	w.seen = true
	w.TelemetrySeries.in, w.TelemetrySeries.cut, w.Requests.in = w.in, w.cut, w.in
	return jsonv2.UnmarshalDecode(dec, (*fields)(w))
}

type rawSeries struct {
	in, raw []byte
	cut     *seriesCut
}

// UnmarshalJSONFrom checks the series and keeps it as it came. A series
// as agents write it is checked by seriesReadsAsSamples, which reads its
// bytes once; anything else, and whatever that check does not take, is
// decoded into samples, which says exactly what is wrong, if anything.
// A series cut out (decodeCut) was checked: here is its placeholder.
func (s *rawSeries) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	v, err := dec.ReadValue()
	if err != nil {
		return err
	}
	end := dec.InputOffset()
	start := end - int64(len(v))
	if s.cut != nil {
		if start != s.cut.start || s.cut.placed || string(v) != "[]" {
			return errCutMisplaced
		}
		s.cut.placed, s.raw = true, s.cut.series
		return nil
	}
	if !seriesReadsAsSamples(v) {
		var samples []protocol.TelemetrySample
		if err := jsonv2.Unmarshal(v, &samples); err != nil {
			return placeError(err, start, dec.StackPointer())
		}
	}
	// The message's own bytes, which outlive the decoder's buffer.
	s.raw = valueAt(s.in, start, end)
	return nil
}

// placeError moves the error of decoding a value alone to where the value
// is in the document: at byte offset off, field ptr.
func placeError(err error, off int64, ptr jsontext.Pointer) error {
	var sem *jsonv2.SemanticError
	var syn *jsontext.SyntacticError
	switch {
	case errors.As(err, &sem):
		e := *sem
		e.ByteOffset += off
		e.JSONPointer = ptr + e.JSONPointer
		return &e
	case errors.As(err, &syn):
		e := *syn
		e.ByteOffset += off
		e.JSONPointer = ptr + e.JSONPointer
		return &e
	}
	return err
}

type rawRequests struct {
	in, raw []byte
	records []protocol.RequestRecord
}

// UnmarshalJSONFrom decodes the records and keeps them as they came.
func (r *rawRequests) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	start := dec.InputOffset()
	if err := jsonv2.UnmarshalDecode(dec, &r.records); err != nil {
		return err
	}
	r.raw = valueAt(r.in, start, dec.InputOffset())
	return nil
}

// valueAt is the JSON value that a decoder read between the offsets start
// and end of data: from start on, a member's value follows its name
// after white space and a colon. A null is no value.
func valueAt(data []byte, start, end int64) []byte {
	v := bytes.TrimLeft(data[start:end], " \t\r\n:")
	if string(v) == "null" {
		return nil
	}
	return v
}

// fitsFloat64 reports whether a JSON number parses as a float64 without
// overflowing. One without an exponent and with fewer digits than the
// largest float64 (309 before the point) always does.
func fitsFloat64(num []byte) bool {
	if len(num) < 300 {
		exp := false
		for _, b := range num {
			exp = exp || b == 'e' || b == 'E'
		}
		if !exp {
			return true
		}
	}
	_, err := strconv.ParseFloat(string(num), 64)
	return err == nil
}

// DecodeCombination reads a combination as the controller stores it (its
// JSON without request records), with the options the records were
// checked in; without series it skips the telemetry series, which only a
// whole run document carries.
func DecodeCombination(data []byte, series bool) (protocol.Combination, error) {
	if series {
		var c protocol.Combination
		err := jsonv2.Unmarshal(data, &c)
		return c, err
	}
	var w struct {
		protocol.Combination
		TelemetrySeries jsontext.Value `json:"telemetry_series"`
	}
	err := jsonv2.Unmarshal(data, &w)
	return w.Combination, err
}

// DecodeSeries reads a telemetry series as Result keeps it.
func DecodeSeries(data []byte) ([]protocol.TelemetrySample, error) {
	var s []protocol.TelemetrySample
	err := jsonv2.Unmarshal(data, &s)
	return s, err
}

// DecodeRequests reads a combination's request records as the controller
// stores them.
func DecodeRequests(data []byte) ([]protocol.RequestRecord, error) {
	var rs []protocol.RequestRecord
	err := jsonv2.Unmarshal(data, &rs)
	return rs, err
}

// describeV2Error turns an encoding/json/v2 error into one that names the
// line and column, and the field, where the document was wrong.
func describeV2Error(data []byte, err error) error {
	var sem *jsonv2.SemanticError
	var syn *jsontext.SyntacticError
	var off int64
	var ptr jsontext.Pointer
	var cause error
	switch {
	case errors.As(err, &syn):
		off, ptr, cause = syn.ByteOffset, syn.JSONPointer, syn.Err
	case errors.As(err, &sem):
		off, ptr = sem.ByteOffset, sem.JSONPointer
		cause = sem.Err
		if cause == nil {
			want := "another type"
			if sem.GoType != nil {
				want = "Go " + sem.GoType.String()
			}
			cause = fmt.Errorf("got JSON %s, want %s", describeKind(sem.JSONKind, sem.JSONValue), want)
		}
	default:
		return err
	}
	l, c := protocol.LineCol(data, off)
	if ptr != "" {
		return fmt.Errorf("line %d column %d: field %q: %v", l, c, string(ptr), cause)
	}
	return fmt.Errorf("line %d column %d: %v", l, c, cause)
}

func describeKind(k jsontext.Kind, v jsontext.Value) string {
	switch k {
	case 'n':
		return "null"
	case 'f', 't':
		return "bool"
	case '"':
		return "string"
	case '0':
		if len(v) > 0 && len(v) <= 40 {
			return "number " + string(v)
		}
		return "number"
	case '{':
		return "object"
	case '[':
		return "array"
	}
	return "value"
}
