package store

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/klauspost/compress/s2"

	"github.com/vlmfleet/vlmfleet/controller/received"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// A combination's record and its request records are most of what the
// store holds and writes: a combination's telemetry series (a sample every
// half second, with every rail and field of tegrastats) and its per-request
// timings. They are kept compressed, as S2 blocks: S2 compresses them about
// three times at several hundred MB/s and decompresses at over a GB/s,
// where writing their JSON as it is was what bounded the ingest rate
// (docs/benchmarks.md). A record starts with compressedRecord, or is the
// JSON itself, as in files of schema 1, which never start so: JSON starts
// with '{' or '['.
const compressedRecord = 0x01

// compressAbove is the size a record's JSON must exceed to be compressed:
// smaller ones gain too little to pay for it.
const compressAbove = 512

// A Preparer encodes result messages' records for the store (Prepare),
// reusing its buffers from one message to the next: the records' JSON and
// their compression, written in buffers made for each, were half of what
// it allocated. One goroutine uses it at a time. The zero Preparer is
// ready to use.
type Preparer struct {
	js, z []byte
}

// record is the stored form of a record's JSON, in memory of its own.
func (p *Preparer) record(js []byte) []byte {
	if len(js) <= compressAbove {
		return bytes.Clone(js)
	}
	if n := s2.MaxEncodedLen(len(js)); cap(p.z) < n {
		p.z = make([]byte, n)
	}
	z := s2.Encode(p.z[:cap(p.z)], js)
	return append(append(make([]byte, 0, 1+len(z)), compressedRecord), z...)
}

// decodeRecord is the JSON of a stored record.
func decodeRecord(v []byte) ([]byte, error) {
	if len(v) == 0 || v[0] != compressedRecord {
		return v, nil
	}
	js, err := s2.Decode(nil, v[1:])
	if err != nil {
		return nil, fmt.Errorf("decompress: %w", err)
	}
	return js, nil
}

// Result is a result message prepared for storing (PrepareResult): its
// combination's records encoded and compressed as the store keeps them,
// which costs more than storing them, outside the transaction that does.
type Result struct {
	protocol.ResultMessage
	// key is the combination's key, and combo and requests its records as
	// stored; requests is nil when it has none.
	key             string
	combo, requests []byte
}

// PrepareResult encodes a received result message's records for
// ApplyResults, as a Preparer of its own does (Preparer.Prepare).
func PrepareResult(r *received.Result) (*Result, error) {
	return new(Preparer).Prepare(r)
}

// Prepare encodes a received result message's records for ApplyResults.
// The combination's telemetry series and request records are stored as
// they came (received.Result), the combination's other fields as
// encoding/json writes them.
func (p *Preparer) Prepare(r *received.Result) (*Result, error) {
	res := &Result{ResultMessage: r.ResultMessage}
	if r.Combination == nil {
		return res, nil
	}
	c := *r.Combination
	var err error
	if res.key, res.combo, res.requests, err = p.combination(c, r.Series, r.Requests); err != nil {
		// It would fail the same way again: refused, not retried.
		return nil, &RejectError{Reason: err.Error()}
	}
	// The message keeps the combination without its bulk, encoded now.
	c.TelemetrySeries, c.Requests = nil, nil
	res.Combination = &c
	return res, nil
}

// combination is a combination's key and its records as stored: the
// combination without its requests (and with series, when not nil, as its
// telemetry series), and its requests (nil when it has none), encoded
// from c.Requests when requests is nil.
func (p *Preparer) combination(c protocol.Combination, series, requests []byte) (key string, combo, reqs []byte, err error) {
	key = c.ComboKey.String()
	if requests == nil && len(c.Requests) > 0 {
		if requests, err = json.Marshal(c.Requests); err != nil {
			return "", nil, nil, fmt.Errorf("encode the requests of %s: %w", key, err)
		}
	}
	if requests != nil {
		reqs = p.record(requests)
	}
	c.Requests = nil
	if series != nil {
		c.TelemetrySeries = nil
	}
	// As json.Marshal writes it, in a buffer with room for the series.
	buf := bytes.NewBuffer(p.js[:0])
	buf.Grow(len(series) + 4<<10)
	if err := json.NewEncoder(buf).Encode(&c); err != nil {
		return "", nil, nil, fmt.Errorf("encode %s: %w", key, err)
	}
	js := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	if series != nil {
		// The series, checked, as it came, as the object's last member.
		js = append(append(append(js[:len(js)-1], `,"telemetry_series":`...), series...), '}')
	}
	p.js = js[:0]
	return key, p.record(js), reqs, nil
}

// readCombination decodes a stored combination record, with its telemetry
// series or without.
func readCombination(v []byte, series bool) (protocol.Combination, error) {
	js, err := decodeRecord(v)
	if err != nil {
		return protocol.Combination{}, err
	}
	return received.DecodeCombination(js, series)
}

// readRequests decodes a stored record of a combination's requests.
func readRequests(v []byte) ([]protocol.RequestRecord, error) {
	js, err := decodeRecord(v)
	if err != nil {
		return nil, err
	}
	return received.DecodeRequests(js)
}
