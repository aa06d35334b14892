package controller

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/vlmfleet/vlmfleet/internal/testutil/browsertest"
)

// The API token typed on one page is filled in on the others in the same
// tab: the pages keep it under one name (lab.js), so it is typed once per
// visit, not once per page.
func TestPagesShareTheTypedToken(t *testing.T) {
	path := chromium(t)
	c := startController(t, t.TempDir())
	ctx := browsertest.Open(t, path, 60*time.Second)
	const typed = "token-typed-on-the-fleet-page"
	if err := chromedp.Do(ctx, chromedp.Navigate(c.HTTPURL()+"/fleet")); err != nil {
		t.Fatalf("open /fleet: %v", err)
	}
	if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS("#token"), typed)); err != nil {
		t.Fatalf("type the token: %v", err)
	}
	for _, page := range []string{"/sweeps", "/sweeps/s-1", "/fleet"} {
		if err := chromedp.Do(ctx, chromedp.Navigate(c.HTTPURL()+page)); err != nil {
			t.Fatalf("open %s: %v", page, err)
		}
		js := `document.getElementById("token").value === "` + typed + `"`
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](js, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(10*time.Second))); err != nil {
			t.Errorf("%s: the token field does not hold the token typed on /fleet: %v", page, err)
		}
	}
}
