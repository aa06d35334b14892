package controller

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/rs/zerolog"

	"github.com/vlmfleet/vlmfleet/explorer"
	"github.com/vlmfleet/vlmfleet/explorer/web"
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
	for _, page := range []string{"/sweeps", "/sweeps/s-1", "/live", "/fleet"} {
		if err := chromedp.Do(ctx, chromedp.Navigate(c.HTTPURL()+page)); err != nil {
			t.Fatalf("open %s: %v", page, err)
		}
		js := `document.getElementById("token").value === "` + typed + `"`
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](js, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(10*time.Second))); err != nil {
			t.Errorf("%s: the token field does not hold the token typed on /fleet: %v", page, err)
		}
	}
}

// Every page the controller serves has the same links, to the explorer,
// the live page, the fleet, the sweeps, the compare page and the latency
// and throughput page, with the page itself marked; the controller's pages
// have the one token field and the health mark; the explorer's show the
// controller's health too.
func TestEveryPageHasTheSameLinks(t *testing.T) {
	path := chromium(t)
	c := startControllerWith(t, Options{DataDir: t.TempDir(),
		Explorer: func(runs RunSource) http.Handler { return explorer.NewHandler(runs, zerolog.Nop(), web.WithLab()) }})
	ctx := browsertest.Open(t, path, 60*time.Second)
	want := []string{"/", "/live", "/fleet", "/sweeps", "/compare", "/profiles"}
	for _, page := range []struct{ path, current string }{
		{"/", "/"}, {"/live", "/live"}, {"/fleet", "/fleet"}, {"/sweeps", "/sweeps"}, {"/sweeps/s-1", "/sweeps"}, {"/compare", "/compare"}, {"/profiles", "/profiles"},
	} {
		if err := chromedp.Do(ctx, chromedp.Navigate(c.HTTPURL()+page.path)); err != nil {
			t.Fatalf("open %s: %v", page.path, err)
		}
		type nav struct {
			Links   []string
			Current string
			Visible bool
			Token   bool
			Health  string
		}
		js := `(() => { const n = document.querySelector(".lab-nav"); if (!n) return null;
			return {Links: [...n.querySelectorAll("a")].map(a => a.getAttribute("href")),
				Current: (n.querySelector("a[aria-current=page]") || {getAttribute: () => ""}).getAttribute("href"),
				Visible: !n.hidden && n.offsetParent !== null, Token: !!document.getElementById("token"),
				Health: (document.getElementById("health-ok") || {textContent: ""}).textContent}; })()`
		poll := `(() => { const n = document.querySelector(".lab-nav"); return !!n && !n.hidden; })()`
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](poll, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(10*time.Second))); err != nil {
			t.Errorf("%s: no visible links: %v", page.path, err)
			continue
		}
		got, err := chromedp.Run(ctx, chromedp.Evaluate[nav](js))
		if err != nil {
			t.Fatalf("%s: %v", page.path, err)
		}
		if !slices.Equal(got.Links, want) || got.Current != page.current || !got.Visible {
			t.Errorf("%s: links %v (current %q, visible %v), want %v with %s current", page.path, got.Links, got.Current, got.Visible, want, page.current)
		}
		if lab := !strings.HasPrefix(page.path, "/compare") && page.path != "/profiles" && page.path != "/"; lab && (!got.Token || got.Health == "") {
			if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.getElementById("health-ok").textContent === "health ok"`, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(10*time.Second))); err != nil || !got.Token {
				t.Errorf("%s: token field %v, health mark never said ok: %v", page.path, got.Token, err)
			}
		}
	}
}
