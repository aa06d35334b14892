package explorer

import (
	"bytes"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// pageRows is what the served page holds in its table body.
func pageRows(t *testing.T, page string) string {
	t.Helper()
	const open = `<tbody id="tbody">`
	i := strings.Index(page, open)
	j := strings.Index(page, `</tbody>`)
	if i < 0 || j < i {
		t.Fatalf("the page has no table body:\n%s", page)
	}
	return page[i+len(open) : j]
}

func getPage(t *testing.T, url string, etag string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if etag != "" {
		req.Header.Set("If-None-Match", etag)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	if _, err := b.ReadFrom(resp.Body); err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header.Get("ETag"), b.String()
}

// The page carries the first rows of its default view, made once per
// generation of the runs (same body, same ETag, one read of the runs) and
// made again when a result arrives.
func TestServedPageCarriesTheFirstRowsOfItsGeneration(t *testing.T) {
	runs := handlerRuns()
	src := &genSource{runs: runs[:2]}
	srv := serve(t, src)
	code, etag, page := getPage(t, srv.URL+"/", "")
	if code != http.StatusOK || etag == "" {
		t.Fatalf("GET /: %d, ETag %q", code, etag)
	}
	rows := pageRows(t, page)
	ds := Aggregate(runs[:2], time.Now())
	for _, want := range []string{`data-id="` + ds.Rows[0].ID + `"`, `data-id="` + ds.Rows[1].ID + `"`, ">Cosmos3-Edge<", ">SIMULATED<", `elementtiming="first-row"`} {
		if !strings.Contains(rows, want) {
			t.Errorf("the page's rows lack %s:\n%s", want, rows)
		}
	}
	if n := strings.Count(rows, `<tr class="row`); n != 2 {
		t.Errorf("%d rows in the page, want 2", n)
	}
	for range 3 {
		c, e, p := getPage(t, srv.URL+"/", "")
		if c != http.StatusOK || e != etag || p != page {
			t.Fatalf("GET / again at one generation: %d, ETag %q (was %q), same body %v", c, e, etag, p == page)
		}
	}
	if c, _, _ := getPage(t, srv.URL+"/", etag); c != http.StatusNotModified {
		t.Errorf("GET / with If-None-Match: %d, want 304", c)
	}
	if n := src.reads.Load(); n != 1 {
		t.Errorf("the runs were read %d times at one generation, want once", n)
	}

	src.add(runs[2])
	c, e, p := getPage(t, srv.URL+"/", etag)
	if c != http.StatusOK || e == etag {
		t.Fatalf("GET / after a new run with the old ETag: %d, ETag %q", c, e)
	}
	if rows := pageRows(t, p); !strings.Contains(rows, ">Qwen3-VL-4B-Instruct<") || strings.Count(rows, `<tr class="row`) != 3 {
		t.Errorf("the page after a new run does not show it:\n%s", rows)
	}
}

// Results come from the network: what a run calls its model, quantization
// or error is text in the page, never markup.
func TestServedPageEscapesResults(t *testing.T) {
	run := testRun("evil", 0, protocol.RunCompleted, 0.5)
	run.Config = protocol.Configuration{Model: `<script>alert(1)</script>`, ParamsB: 2, Quantization: `Q4"><img src=x onerror=alert(2)>`, Engine: "vLLM", Device: "Jetson & Co"}
	run.Combinations = []protocol.Combination{combo("720p", 1, 1, 0, 0, 8)}
	run.Combinations[0].Errors = []protocol.ErrorCount{{Error: `HTTP 400: <b>"big"</b>`, Count: 8}}
	srv := serve(t, runList{runs: []protocol.Run{run}})
	code, _, page := getPage(t, srv.URL+"/", "")
	if code != http.StatusOK {
		t.Fatalf("GET /: %d", code)
	}
	rows := pageRows(t, page)
	for _, bad := range []string{"<script>alert", "<img", "<b>"} {
		if strings.Contains(rows, bad) {
			t.Errorf("the rows hold markup %q from a result:\n%s", bad, rows)
		}
	}
	for _, want := range []string{
		`&lt;script&gt;alert(1)&lt;/script&gt;`,
		`Jetson &amp; Co`,
		`title="all 8 requests failed: HTTP 400: &lt;b&gt;&#34;big&#34;&lt;/b&gt;"`,
		`<span class="why">all 8 requests failed: HTTP 400: &lt;b&gt;&#34;big&#34;&lt;/b&gt;</span>`,
		`>all failed<`,
	} {
		if !strings.Contains(rows, want) {
			t.Errorf("the rows lack %s:\n%s", want, rows)
		}
	}
}

// A page whose runs cannot be read goes out with an empty table; its
// script reports the failure when it asks for the data.
func TestServedPageWithoutRunsHasAnEmptyTable(t *testing.T) {
	srv := serve(t, runList{err: errors.New("store closed")})
	code, _, page := getPage(t, srv.URL+"/", "")
	if code != http.StatusOK || strings.TrimSpace(pageRows(t, page)) != "" {
		t.Errorf("GET / with a failing store: %d, rows %q", code, pageRows(t, page))
	}
}

// The cells are written as logic.js writes them, ties and all (the browser
// test holds them to Chromium's: web/firstrows_browser_test.go).
func TestJSFormats(t *testing.T) {
	// What Chromium's toFixed answers; 1.005 and 1.45 are a little under
	// their decimals, 0.05 a little over.
	for _, c := range []struct {
		x      float64
		digits int
		want   string
	}{
		{12.25, 1, "12.3"}, {0.125, 2, "0.13"}, {1.005, 2, "1.00"}, {1.45, 1, "1.4"}, {0.05, 1, "0.1"},
		{2.5, 0, "3"}, {-1.5, 0, "-2"}, {0, 2, "0.00"}, {1e-7, 2, "0.00"}, {310.349, 1, "310.3"}, {9.96, 1, "10.0"},
	} {
		if got := jsToFixed(c.x, c.digits); got != c.want {
			t.Errorf("jsToFixed(%v, %d) = %q, want %q", c.x, c.digits, got, c.want)
		}
	}
	for x, want := range map[float64]float64{2.5: 3, -2.5: -2, 0.49999999999999994: 0, -0.5: -0, 1.4999: 1} {
		if got := jsRound(x); got != want {
			t.Errorf("jsRound(%v) = %v, want %v", x, got, want)
		}
	}
	f := func(v float64) *float64 { return &v }
	for _, c := range []struct{ got, want string }{
		{jsFormatSeconds(f(0.125)), "0.13"}, {jsFormatSeconds(f(3)), "3.00"}, {jsFormatSeconds(nil), "—"},
		{jsFormatTPS(f(12.25)), "12.3"}, {jsFormatTPS(f(0)), "—"}, {jsFormatTPS(nil), "—"},
		{jsFormatParams(2.45), "2.5B"}, {jsFormatParams(8), "8.0B"}, {jsFormatParams(26.4), "26B"}, {jsFormatParams(12.5), "13B"}, {jsFormatParams(0), "—"},
		{failureText(1, ""), "the one request failed"}, {failureText(8, "HTTP 400"), "all 8 requests failed: HTTP 400"},
	} {
		if c.got != c.want {
			t.Errorf("%q, want %q", c.got, c.want)
		}
	}
}
