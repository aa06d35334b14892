package controller

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/vlmfleet/vlmfleet/internal/testutil/browsertest"
)

// forgeryPage is a page of another origin that tries to submit a sweep to
// the controller at %[1]s, as a page a lab member opens could: fetches in
// no-cors mode with a text/plain or JSON body (no preflight), with and
// without credentials; a CORS fetch with a JSON body (preflighted); and a
// form posted as text/plain. window.outcome settles once every answer is in.
const forgeryPage = `<!doctype html><html><head><meta charset="utf-8"><title>forgery</title></head><body>
<iframe name="sink"></iframe>
<form id="f" method="POST" action="%[1]s/api/sweeps" enctype="text/plain" target="sink"><input type="hidden" name='%[3]s' value='"}'></form>
<script>
const sweep = JSON.stringify(%[2]s);
window.outcome = (async () => {
  const tries = [
    {method: 'POST', mode: 'no-cors', headers: {'Content-Type': 'text/plain'}, body: sweep},
    {method: 'POST', mode: 'no-cors', credentials: 'include', headers: {'Content-Type': 'text/plain'}, body: sweep},
    {method: 'POST', mode: 'no-cors', body: new Blob([sweep], {type: 'application/json'})},
    {method: 'POST', credentials: 'include', headers: {'Content-Type': 'application/json'}, body: sweep},
  ];
  const out = [];
  for (const t of tries) {
    try {
      const r = await fetch('%[1]s/api/sweeps', t);
      out.push(r.type + ' ' + r.status);
    } catch (e) {
      out.push('refused: ' + e.message);
    }
  }
  await new Promise(done => {
    const sink = document.querySelector('iframe');
    sink.onload = done;
    document.getElementById('f').submit();
  });
  out.push('form posted');
  return out;
})();
</script></body></html>`

// browserPath is chromium's path; the test fails without one unless
// VLMFLEET_NO_BROWSER is set.
func browserPath(t *testing.T) string {
	t.Helper()
	if os.Getenv("VLMFLEET_NO_BROWSER") != "" {
		t.Skip("VLMFLEET_NO_BROWSER is set")
	}
	p, err := browsertest.Path()
	if err != nil {
		t.Fatalf("%v; set VLMFLEET_NO_BROWSER to skip", err)
	}
	return p
}

// A page served from another loopback origin cannot submit a sweep: real
// Chromium tries every way a page can send a cross-origin POST without the
// token, and the controller stores nothing.
func TestBrowserOnAnotherOriginCannotSubmitASweep(t *testing.T) {
	path := browserPath(t)
	c := startController(t, t.TempDir())
	announced(t, c, "a1", "d1")
	sweep := `{"agents":["a1"],"workload":{"sizes":["720p"],"cameras":[1],"multi_image_sizes":[]}}`
	// The form's body is name=value: a sweep whose name is "=".
	formName := strings.TrimSuffix(sweep, "}") + `,"name":"`
	page := fmt.Sprintf(forgeryPage, c.HTTPURL(), sweep, formName)
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(page))
	}))
	t.Cleanup(evil.Close)

	ctx := browsertest.Open(t, path, 60*time.Second)
	if err := chromedp.Do(ctx, chromedp.Navigate(evil.URL)); err != nil {
		t.Fatalf("open the page: %v", err)
	}
	outcome, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`window.outcome`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("the page's tries: %v", err)
	}
	t.Logf("what the page saw: %q", outcome)
	if len(outcome) != 5 {
		t.Fatalf("the page made %d tries, want 5: %q", len(outcome), outcome)
	}
	sweeps, err := c.store.Sweeps(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(sweeps) != 0 {
		t.Errorf("a page of another origin submitted %d sweeps: %+v", len(sweeps), sweeps)
	}
}
