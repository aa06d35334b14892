package controller

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/vlmfleet/vlmfleet/controller/access"
	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/controller/store"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// importRetryAfter is the Retry-After, in seconds, of an import refused
// because others are running.
const importRetryAfter = "5"

// errDocumentTooLarge is what docLimitReader says past its limit.
var errDocumentTooLarge = errors.New("document over the limit")

// docLimitReader refuses to read more than MaxImportDocument+1 bytes past
// the decoder's position (set before each step of the decoder), so the
// decoder never buffers more than one document's worth, however large the
// document in the body is.
type docLimitReader struct {
	r        io.Reader
	n, limit int64
}

func (d *docLimitReader) Read(p []byte) (int, error) {
	room := d.limit - d.n
	if room <= 0 {
		return 0, errDocumentTooLarge
	}
	if int64(len(p)) > room {
		p = p[:room]
	}
	n, err := d.r.Read(p)
	d.n += int64(n)
	return n, err
}

// importDecoder reads {"runs":[...]} one entry at a time.
type importDecoder struct {
	lr  *docLimitReader
	dec *json.Decoder
}

// step lets the decoder read one more document's worth from where it is.
func (d *importDecoder) step() *json.Decoder {
	d.lr.limit = d.dec.InputOffset() + api.MaxImportDocument + 1
	return d.dec
}

// DecodeImportStream reads an import body, {"runs":[{"origin":...,"run":{...}}]},
// as a stream: one entry at a time, never buffering more than one entry's
// worth of the body. An entry over MaxImportDocument is refused (a
// 413 *requestError naming its index) without reading much past the limit.
// Each run is checked fully by the store inside the import transaction;
// here only the shape and the schema.
func DecodeImportStream(r io.Reader) ([]api.ImportEntry, error) {
	d := &importDecoder{lr: &docLimitReader{r: r}}
	d.dec = json.NewDecoder(d.lr)
	t, err := d.step().Token()
	if err != nil {
		return nil, d.syntax(err)
	}
	if t != json.Delim('{') {
		return nil, fmt.Errorf(`import: want an object {"runs":[...]}, not %v`, t)
	}
	var entries []api.ImportEntry
	sawRuns := false
	for d.step().More() {
		t, err := d.dec.Token()
		if err != nil {
			return nil, d.syntax(err)
		}
		key, _ := t.(string)
		if !strings.EqualFold(key, "runs") {
			// Unknown fields are skipped, as a newer writer may add some.
			var skip json.RawMessage
			if err := d.step().Decode(&skip); err != nil {
				return nil, d.syntax(fmt.Errorf("field %q: %w", key, err))
			}
			continue
		}
		if sawRuns {
			return nil, errors.New(`import: "runs" given twice`)
		}
		sawRuns = true
		if entries, err = d.runs(); err != nil {
			return nil, err
		}
	}
	if _, err := d.step().Token(); err != nil { // the closing brace
		return nil, d.syntax(err)
	}
	if _, err := d.step().Token(); err != io.EOF {
		return nil, errors.New("import: trailing data after the JSON document")
	}
	if len(entries) == 0 {
		return nil, errors.New(`import: "runs" is empty; want {"runs":[{"origin":"file.json","run":{...}}]}`)
	}
	for i, e := range entries {
		if s := e.Run.Schema; s < 1 || s > protocol.SchemaVersion {
			return nil, &store.ImportError{Index: i, Origin: e.Origin, Err: fmt.Errorf("run.schema %d, this build reads schema 1..%d", s, protocol.SchemaVersion)}
		}
	}
	return entries, nil
}

// runs reads the array of entries, one at a time.
func (d *importDecoder) runs() ([]api.ImportEntry, error) {
	t, err := d.step().Token()
	if err != nil {
		return nil, d.syntax(err)
	}
	if t == nil { // "runs": null
		return nil, nil
	}
	if t != json.Delim('[') {
		return nil, fmt.Errorf(`import: "runs" is %v, want an array`, t)
	}
	var entries []api.ImportEntry
	for i := 0; d.step().More(); i++ {
		start := d.dec.InputOffset()
		var e api.ImportEntry
		err := d.step().Decode(&e)
		if errors.Is(err, errDocumentTooLarge) || d.dec.InputOffset()-start > api.MaxImportDocument {
			return nil, &requestError{http.StatusRequestEntityTooLarge, &store.ImportError{Index: i,
				Err: fmt.Errorf("the document is over %d MiB, the most one result document may be (as over NATS)", api.MaxImportDocument>>20)}}
		}
		var bodyTooBig *http.MaxBytesError
		if errors.As(err, &bodyTooBig) {
			return nil, err
		}
		if err != nil {
			return nil, &store.ImportError{Index: i, Origin: e.Origin, Err: d.describe(err)}
		}
		entries = append(entries, e)
	}
	if _, err := d.step().Token(); err != nil { // the closing bracket
		return nil, d.syntax(err)
	}
	return entries, nil
}

func (d *importDecoder) syntax(err error) error {
	if errors.Is(err, errDocumentTooLarge) {
		return &requestError{http.StatusRequestEntityTooLarge, fmt.Errorf("import: a value outside \"runs\" is over %d MiB", api.MaxImportDocument>>20)}
	}
	if errors.Is(err, io.EOF) && d.dec.InputOffset() == 0 {
		return errors.New(`import: the body is empty; want {"runs":[...]}`)
	}
	return fmt.Errorf("import: %w", d.describe(err))
}

// describe says what is wrong, naming the field of a type error. (The
// decoder's offsets are relative to the value it decodes; the entry's
// index says where.)
func (d *importDecoder) describe(err error) error {
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &typ):
		return fmt.Errorf("field %q: got JSON %s, want %s", typ.Field, typ.Value, typ.Type)
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return errors.New("the document ends before it is complete")
	}
	return err
}

// handleImport stores the runs of an import body read as a stream, at most
// MaxImportBody bytes, at most MaxConcurrentImports at once.
func (c *Controller) handleImport(w http.ResponseWriter, r *http.Request) {
	select {
	case c.sec.Imports <- struct{}{}:
		defer func() { <-c.sec.Imports }()
	default:
		w.Header().Set("Retry-After", importRetryAfter)
		api.WriteError(w, http.StatusTooManyRequests, fmt.Errorf("%d imports are running, the most this controller takes at once; retry in a few seconds", api.MaxConcurrentImports))
		return
	}
	tooLarge := fmt.Errorf("request body over %d bytes (%d MiB), the most one import may be: import the runs in smaller groups", api.MaxImportBody, api.MaxImportBody>>20)
	if r.ContentLength > api.MaxImportBody {
		// Said up front: refused before a byte of it is read and parsed.
		api.WriteError(w, http.StatusRequestEntityTooLarge, tooLarge)
		return
	}
	entries, err := DecodeImportStream(http.MaxBytesReader(w, r.Body, api.MaxImportBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		var req *requestError
		status := http.StatusBadRequest
		switch {
		case errors.As(err, &tooBig):
			status, err = http.StatusRequestEntityTooLarge, tooLarge
		case errors.As(err, &req):
			status = req.status
		}
		api.WriteError(w, access.BodyStalledStatus(err, status), err)
		return
	}
	ids, err := c.store.ImportRuns(importEntries(entries))
	if err != nil {
		api.WriteError(w, statusOf(err), err)
		return
	}
	c.log.Info().Int("runs", len(ids)).Msg("imported runs")
	api.WriteJSON(w, http.StatusOK, map[string]any{"imported": len(ids), "ids": ids})
}

// DecodeImportRequest reads an import body held in memory, as
// DecodeImportStream does.
func DecodeImportRequest(data []byte) ([]api.ImportEntry, error) {
	return DecodeImportStream(bytes.NewReader(data))
}

// importEntries are the store's records of what an import body names.
func importEntries(in []api.ImportEntry) []store.ImportEntry {
	out := make([]store.ImportEntry, len(in))
	for i, e := range in {
		out[i] = store.ImportEntry(e)
	}
	return out
}
