package web_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/vlmfleet/vlmfleet/explorer/web"
)

// Served by a controller (WithLab), the explorer shows the links to the
// controller's other pages and the controller's health when it is not ok;
// served alone it shows neither and asks for no health.
func TestExplorerInTheLabShowsLinksAndHealth(t *testing.T) {
	data := mustJSON(t, powerDataset())
	healthAsked := make(chan struct{}, 16)
	srv := func(opts ...web.Option) string {
		mux := http.NewServeMux()
		mux.HandleFunc("GET /api/explorer/data", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Write(data)
		})
		mux.HandleFunc("GET /api/health", func(w http.ResponseWriter, _ *http.Request) {
			healthAsked <- struct{}{}
			// The controller answers 503 with this body; the page reads
			// the body whatever the status, and a 503 here would be a
			// failed request in the console, which every test refuses.
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"status":"degraded","problems":[{"component":"store","error":"the disk is full"}]}`))
		})
		mux.Handle("/", web.Handler(opts...))
		s := httptest.NewServer(mux)
		t.Cleanup(s.Close)
		return s.URL
	}
	ctx := newTab(t)
	open(t, ctx, srv(web.WithLab()))
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`!document.getElementById('health-banner').hidden`, chromedp.WithPollingTimeout(10*time.Second))); err != nil {
		t.Fatalf("no health banner: %v", err)
	}
	if got := eval[string](t, ctx, `document.getElementById('health-banner').textContent`); got != "Controller DEGRADEDstore: the disk is full" {
		t.Errorf("health banner %q", got)
	}
	if got := eval[[]string](t, ctx, `[...document.querySelectorAll('#lab-nav a')].filter(a => a.offsetParent !== null).map(a => a.getAttribute('href'))`); len(got) != 6 {
		t.Errorf("visible links %v, want the six pages", got)
	}

	alone := newTab(t)
	for len(healthAsked) > 0 {
		<-healthAsked
	}
	open(t, alone, srv())
	if eval[bool](t, alone, `!document.getElementById('lab-nav').hidden || !document.getElementById('health-banner').hidden`) {
		t.Error("the explorer served alone shows the lab's links or health")
	}
	if n := len(healthAsked); n != 0 {
		t.Errorf("the explorer served alone asked for the health %d times", n)
	}
}
