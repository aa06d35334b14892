package controller

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/controller/api"
)

// filler reads n bytes of 'x'.
type filler struct{ n int64 }

func (f *filler) Read(p []byte) (int, error) {
	if f.n <= 0 {
		return 0, io.EOF
	}
	k := int(min(int64(len(p)), f.n))
	for i := range k {
		p[i] = 'x'
	}
	f.n -= int64(k)
	return k, nil
}

// countingReader counts what was read of r.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// importEntry is one entry whose run's model name is model bytes long,
// made as it is read.
func importEntry(id string, model int64) io.Reader {
	return io.MultiReader(strings.NewReader(`{"origin":"`+id+`.json","run":{"schema":1,"id":"`+id+`","config":{"model":"`),
		&filler{model}, strings.NewReader(`"}}}`))
}

// importBody is {"runs":[entries...]}, made as it is read.
func importBody(entries ...io.Reader) io.Reader {
	parts := []io.Reader{strings.NewReader(`{"runs":[`)}
	for i, e := range entries {
		if i > 0 {
			parts = append(parts, strings.NewReader(","))
		}
		parts = append(parts, e)
	}
	return io.MultiReader(append(parts, strings.NewReader("]}"))...)
}

func TestDecodeImportStream(t *testing.T) {
	entries, err := DecodeImportStream(strings.NewReader(`{"note":{"x":[1,2]},"runs":[{"origin":"a","run":{"schema":1,"id":"r1"}},{"run":{"schema":1,"id":"r2","new_field":1}}]}`))
	if err != nil || len(entries) != 2 || entries[0].Origin != "a" || entries[1].Run.ID != "r2" {
		t.Fatalf("entries %+v, %v", entries, err)
	}
	// A document just under the limit is taken.
	entries, err = DecodeImportStream(importBody(importEntry("r1", 10), importEntry("r2", api.MaxImportDocument-200)))
	if err != nil || len(entries) != 2 || len(entries[1].Run.Config.Model) != api.MaxImportDocument-200 {
		t.Fatalf("a document under the limit: %d entries, %v", len(entries), err)
	}
	for body, want := range map[string]string{
		``:                         "the body is empty",
		`[]`:                       `want an object {"runs":[...]}`,
		`{"runs":{}}`:              `"runs" is {, want an array`,
		`{"runs":[]}`:              `"runs" is empty`,
		`{"runs":null}`:            `"runs" is empty`,
		`{}`:                       `"runs" is empty`,
		`{"runs":[],"runs":[]}`:    `"runs" given twice`,
		`{"runs":[{"run":{}}]} {}`: "trailing data",
		`{"runs":[{"run":{}}]`:     "ends before it is complete",
		`{"runs":[1]}`:             `runs[0]: field "": got JSON number`,
		`{"runs":[{"run":{"schema":1}},{"run":{"schema":"1"}}]}`: `runs[1]: field "run.schema": got JSON string`,
		`{"runs":[{"run":{"schema":1}},{"run":{"schema":1,}}]}`:  "runs[1]: invalid character '}'",
		`{"runs":[{"origin":"o.json","run":{"schema":9}}]}`:      "runs[0] (origin o.json): run.schema 9",
	} {
		_, err := DecodeImportStream(strings.NewReader(body))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want an error with %q", body, err, want)
		}
	}
}

// A document over the limit is refused, naming its index, and the decoder
// reads hardly past the limit: never the rest of a 20 MB document.
func TestDecodeImportStreamStopsAtTheDocumentLimit(t *testing.T) {
	for _, tc := range []struct {
		name    string
		entries []io.Reader
		index   string
		before  int64 // bytes of the body before the big entry
	}{
		{"one document of 20 MB", []io.Reader{importEntry("big", 20e6)}, "runs[0]", 9},
		{"the third of three", []io.Reader{importEntry("a", 100), importEntry("b", 1000), importEntry("c", 20e6)}, "runs[2]", 1400},
		{"just over the limit", []io.Reader{importEntry("c", api.MaxImportDocument)}, "runs[0]", 9},
	} {
		body := &countingReader{r: importBody(tc.entries...)}
		_, err := DecodeImportStream(body)
		var req *requestError
		if !errors.As(err, &req) || req.status != http.StatusRequestEntityTooLarge || !strings.Contains(err.Error(), tc.index+": the document is over 8 MiB") {
			t.Errorf("%s: %v, want a 413 naming %s", tc.name, err, tc.index)
		}
		if limit := tc.before + api.MaxImportDocument + 1; body.n > limit {
			t.Errorf("%s: read %d bytes of the body, over the %d that the limit allows", tc.name, body.n, limit)
		}
	}
}

// rawPost writes a POST of body to the controller over a connection of its
// own and returns the response, which the controller may send before it
// has read the body (the write then fails, which is ignored).
func rawPost(t *testing.T, c *Controller, path string, size int64, body io.Reader) *http.Response {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(c.HTTPURL(), "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	go func() {
		fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n",
			path, strings.TrimPrefix(c.HTTPURL(), "http://"), c.APIToken(), size)
		_, _ = io.Copy(conn, body)
	}()
	_ = conn.SetReadDeadline(time.Now().Add(waitLimit))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// heapPeak samples the heap until stop is called and returns the peak
// growth over what it was when heapPeak was called.
func heapPeak() (stop func() uint64) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base, peak := ms.HeapAlloc, ms.HeapAlloc
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapAlloc)
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return func() uint64 {
		close(done)
		<-finished
		return peak - base
	}
}

// An import of one 20 MB document gets 413 naming the document, and the
// controller's heap grows by about what one document may be, not by 20 MB
// or a multiple of it.
func TestImportOf20MBDocumentIsRefused(t *testing.T) {
	c := startController(t, t.TempDir())
	const size = 20e6
	body := importBody(importEntry("big", size))
	stop := heapPeak()
	resp := rawPost(t, c, "/api/runs/import", size+68, body)
	b, _ := io.ReadAll(resp.Body)
	grew := stop()
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(errorOf(string(b)), "runs[0]: the document is over 8 MiB") {
		t.Errorf("20 MB document: %d %s, want 413 naming runs[0]", resp.StatusCode, b)
	}
	t.Logf("heap grew by %.1f MiB at most while the controller read a 20 MB document", float64(grew)/(1<<20))
	// The decoder buffers one document: at most MaxImportDocument+1 bytes
	// in a buffer that doubles as it grows (16 MiB, and the 8 MiB one it
	// grew from). Reading the body whole, as before, took 75 MiB here.
	if limit := uint64(5 * api.MaxImportDocument); grew > limit {
		t.Errorf("heap grew by %d MiB, over %d MiB", grew>>20, limit>>20)
	}
}

// An import body over MaxImportBody gets 413 however small its documents:
// at once when its length says so, and once the limit is read when it is
// sent chunked, with no length.
func TestImportOverTheBodyLimitIsRefused(t *testing.T) {
	c := startController(t, t.TempDir())
	body := func() io.Reader {
		var entries []io.Reader
		for i := range 9 {
			entries = append(entries, importEntry(fmt.Sprint("r", i), api.MaxImportBody/8-100))
		}
		return importBody(entries...)
	}
	check := func(how string, resp *http.Response) {
		t.Helper()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(errorOf(string(b)), "the most one import may be") {
			t.Errorf("a body over %d bytes, %s: %d %s, want 413", api.MaxImportBody, how, resp.StatusCode, b)
		}
	}
	check("its length said", rawPost(t, c, "/api/runs/import", api.MaxImportBody+1e6, body()))

	// Reading and parsing 64 MiB takes a while under the race detector.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.HTTPURL()+"/api/runs/import", io.MultiReader(body()))
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = -1 // chunked
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+c.APIToken())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	check("chunked", resp)
}

// At most MaxConcurrentImports imports run at once; one more gets 429 with
// Retry-After. The imports in flight are held open with a body that waits:
// with "Expect: 100-continue" the client sends the body only once the
// handler reads it, so a write that went through proves the handler runs.
func TestConcurrentImportsAreBounded(t *testing.T) {
	c := startController(t, t.TempDir())
	hc := &http.Client{Transport: &http.Transport{ExpectContinueTimeout: time.Minute}}
	var wg sync.WaitGroup
	var pipes []*io.PipeWriter
	for range api.MaxConcurrentImports {
		pr, pw := io.Pipe()
		pipes = append(pipes, pw)
		req, _ := http.NewRequest(http.MethodPost, c.HTTPURL()+"/api/runs/import", pr)
		req.ContentLength = -1 // sent chunked, as it is written
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+c.APIToken())
		req.Header.Set("Expect", "100-continue")
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := hc.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
		}()
		if _, err := pw.Write([]byte(`{"runs":[`)); err != nil {
			t.Fatal(err)
		}
	}
	code, body, h := send(t, http.MethodPost, c.HTTPURL()+"/api/runs/import", `{"runs":[]}`,
		map[string]string{"Content-Type": "application/json", "Authorization": "Bearer " + c.APIToken()})
	if code != http.StatusTooManyRequests || h.Get("Retry-After") == "" || !strings.Contains(errorOf(body), "imports are running") {
		t.Errorf("a third import: %d %s (Retry-After %q), want 429 with Retry-After", code, body, h.Get("Retry-After"))
	}
	// The two end (an empty import, 400); each releases its place before
	// its answer goes out.
	for _, pw := range pipes {
		_, _ = pw.Write([]byte("]}"))
		pw.Close()
	}
	wg.Wait()
	if code, body, _ := send(t, http.MethodPost, c.HTTPURL()+"/api/runs/import", `{"runs":[]}`,
		map[string]string{"Content-Type": "application/json", "Authorization": "Bearer " + c.APIToken()}); code != http.StatusBadRequest {
		t.Errorf("an import once the others ended: %d %s, want the empty import's 400", code, body)
	}
}
