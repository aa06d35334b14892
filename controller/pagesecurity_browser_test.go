package controller

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/rs/zerolog"

	"github.com/vlmfleet/vlmfleet/explorer"
	"github.com/vlmfleet/vlmfleet/internal/testutil/browsertest"
)

// recordViolations is run by the browser before any script of a page: it
// keeps every Content-Security-Policy violation the page reports.
const recordViolations = `window.__violations = [];
document.addEventListener("securitypolicyviolation", e => window.__violations.push(e.violatedDirective + " " + (e.blockedURI || "inline")));`

// In real Chromium every page runs under its policy without a violation,
// and a script the page did not ship (markup shown by mistake) is blocked.
func TestPagesRunUnderTheirPolicyInBrowser(t *testing.T) {
	path := chromium(t)
	c := startControllerWith(t, Options{DataDir: t.TempDir(),
		Explorer: func(runs RunSource) http.Handler { return explorer.NewHandler(runs, zerolog.Nop()) }})
	ctx := browsertest.Open(t, path, 90*time.Second)
	if err := chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: recordViolations})
		return err
	})); err != nil {
		t.Fatal(err)
	}
	for route := range pageRoutes {
		if err := chromedp.Do(ctx, chromedp.Navigate(c.HTTPURL()+route), chromedp.WaitReady(chromedp.CSS("body"))); err != nil {
			t.Fatalf("open %s: %v", route, err)
		}
		// The page's own scripts have run by load; give its first fetches a moment.
		time.Sleep(300 * time.Millisecond)
		seen, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`window.__violations`))
		if err != nil {
			t.Fatal(err)
		}
		if len(seen) != 0 {
			t.Errorf("%s: the page's own content breaks its policy: %q", route, seen)
		}
		injected := `(() => { const s = document.createElement("script"); s.textContent = "window.__injected = 1"; document.body.append(s);
			return new Promise(done => setTimeout(() => done(window.__injected === undefined && window.__violations.length > 0), 100)); })()`
		blocked, err := chromedp.Run(ctx, chromedp.Evaluate[bool](injected, chromedp.EvalAwaitPromise))
		if err != nil {
			t.Fatal(err)
		}
		if !blocked {
			t.Errorf("%s: an inline script the page did not ship ran", route)
		}
	}
}
