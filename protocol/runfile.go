package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// MaxRunFileBytes bounds one file of result documents (an array may hold many).
const MaxRunFileBytes = 64 * MaxMessageBytes

// ReadRunFile reads a file holding a result document, or a JSON array of
// them (vlmfleet bench --json, a controller's /api/runs), and checks each
// as DecodeRunFile does. Errors start with the file's name.
func ReadRunFile(path string) ([]json.RawMessage, []Run, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxRunFileBytes+1))
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(data) > MaxRunFileBytes {
		return nil, nil, fmt.Errorf("%s: more than %d bytes", path, MaxRunFileBytes)
	}
	raws, runs, err := DecodeRunFile(data)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return raws, runs, nil
}

// DecodeRunFile reads a result document, or a JSON array of them, and
// checks each with DecodeRun. It returns each document as written and as
// decoded. An error in an array names the element's index and the line it
// starts on.
func DecodeRunFile(data []byte) ([]json.RawMessage, []Run, error) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return nil, nil, errors.New("empty: want a result document or a JSON array of them")
	}
	if trimmed[0] != '[' {
		r, err := DecodeRun(data)
		if err != nil {
			return nil, nil, err
		}
		return []json.RawMessage{json.RawMessage(trimmed)}, []Run{*r}, nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil {
		return nil, nil, fmt.Errorf("array of result documents: %w", err)
	}
	var raws []json.RawMessage
	var runs []Run
	for i := 0; dec.More(); i++ {
		start := dec.InputOffset()
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			line, col := LineCol(data, dec.InputOffset())
			return nil, nil, fmt.Errorf("[%d]: line %d column %d: %w", i, line, col, err)
		}
		// The decoder's offset is before the separator; the element starts
		// after it and any blanks.
		line, _ := LineCol(data, start+int64(len(data[start:])-len(bytes.TrimLeft(data[start:], " \t\r\n,"))))
		r, err := DecodeRun(raw)
		if err != nil {
			return nil, nil, fmt.Errorf("[%d], starting on line %d: %w", i, line, err)
		}
		raws = append(raws, raw)
		runs = append(runs, *r)
	}
	if _, err := dec.Token(); err != nil {
		line, col := LineCol(data, dec.InputOffset())
		return nil, nil, fmt.Errorf("line %d column %d: %w", line, col, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, nil, errors.New("trailing data after the array of result documents")
	}
	if len(runs) == 0 {
		return nil, nil, errors.New("the array holds no result documents")
	}
	return raws, runs, nil
}

// EncodeRun writes a result document as ReadRunFile reads it: indented
// JSON and a newline.
func EncodeRun(w io.Writer, r *Run) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("encoding the result document: %w", err)
	}
	return nil
}
