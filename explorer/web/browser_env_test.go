package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/vlmfleet/vlmfleet/explorer/web"
	"github.com/vlmfleet/vlmfleet/internal/testutil/browsertest"
)

// browserEnv is the one headless chromium the browser tests share; each test
// opens its own tab. Set once by TestMain, read-only afterwards.
type browserEnv struct {
	ctx     context.Context // the browser; nil when chromium is missing
	missing string          // why there is no browser
}

var shared browserEnv

func TestMain(m *testing.M) {
	os.Exit(runWithBrowser(m))
}

func runWithBrowser(m *testing.M) int {
	path, err := browsertest.Path()
	if err != nil {
		shared.missing = err.Error()
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "vlmfleet-chromium-")
	if err != nil {
		shared.missing = err.Error()
		return m.Run()
	}
	defer os.RemoveAll(dir)
	bctx, closeBrowser := browsertest.Start(path, dir,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.WindowSize(1366, 900),
	)
	defer closeBrowser()
	// The first run starts the browser and binds it to bctx: a timeout on
	// this context would close the browser when it ends.
	if err := chromedp.Do(bctx); err != nil {
		shared.missing = fmt.Sprintf("start chromium %s: %v", path, err)
		return m.Run()
	}
	shared.ctx = bctx
	return m.Run()
}

// newTab opens a tab in the shared browser, or skips (fails under CI) when
// there is none.
func newTab(t *testing.T) context.Context {
	t.Helper()
	if shared.ctx == nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("browser tests need chromium under CI: %s", shared.missing)
		}
		t.Skipf("skipping browser test: %s", shared.missing)
	}
	tab, cancelTab := chromedp.NewContext(shared.ctx)
	ctx, cancel := context.WithTimeout(tab, 30*time.Second)
	// Every test also checks that the page wrote no error to the console:
	// no exception, no failed request, no content-security-policy refusal.
	var mu sync.Mutex
	var bad []string
	done := make(chan struct{})
	messages := chromedp.Console(ctx)
	go func() {
		defer close(done)
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.IsException() || m.Type == "error" {
				mu.Lock()
				bad = append(bad, m.String())
				mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		cancelTab()
		<-done
		mu.Lock()
		defer mu.Unlock()
		if len(bad) > 0 {
			t.Errorf("the page wrote errors to the console:\n%s", strings.Join(bad, "\n"))
		}
	})
	return ctx
}

// serve starts the page plus GET /api/explorer/data with dataset on loopback.
func serve(t *testing.T, dataset []byte) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/explorer/data", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(dataset)
	})
	mux.Handle("/", web.Handler())
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

// artifactDir is where screenshots go: $VLMFLEET_ARTIFACTS, else a temporary
// folder of the test.
func artifactDir(t *testing.T) string {
	t.Helper()
	if d := os.Getenv("VLMFLEET_ARTIFACTS"); d != "" {
		d = filepath.Join(d, "explorer-web")
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatalf("artefact folder: %v", err)
		}
		return d
	}
	return t.TempDir()
}

// open navigates the tab and waits until the page has rendered its data.
func open(t *testing.T, ctx context.Context, url string) {
	t.Helper()
	err := chromedp.Do(ctx,
		chromedp.Navigate(url),
		chromedp.Action[chromedp.Void](func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
			_, err := chromedp.Poll[bool](`!!(window.vlmfleetExplorer && (window.vlmfleetExplorer.ready || window.vlmfleetExplorer.error))`,
				chromedp.WithPollingTimeout(15*time.Second))(ctx, tg)
			return chromedp.Void{}, err
		}),
	)
	if err != nil {
		t.Fatalf("open %s: %v", url, err)
	}
	if msg := eval[string](t, ctx, `window.vlmfleetExplorer.error || ''`); msg != "" {
		t.Fatalf("page did not load its data: %s", msg)
	}
}

func eval[T any](t *testing.T, ctx context.Context, js string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}

func do(t *testing.T, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("browser: %v", err)
	}
}

func click(t *testing.T, ctx context.Context, sel string) {
	t.Helper()
	do(t, ctx, chromedp.Click(chromedp.CSS(sel), chromedp.NodeVisible))
}

// shownRow is a table row as the page shows it.
type shownRow struct {
	ID, Model, Params, Quant, Engine, Device, RT, TPS, Max, Result, Class string
	Simulated                                                             bool
}

// shownRows reads the visible table rows in their order.
func shownRows(t *testing.T, ctx context.Context) []shownRow {
	t.Helper()
	return eval[[]shownRow](t, ctx, `[...document.querySelectorAll('#tbody tr.row')].filter(tr => !tr.hidden).map(tr => {
		const td = tr.children;
		return {ID: tr.dataset.id, Model: td[0].querySelector('.name').textContent, Params: td[1].textContent,
			Quant: td[2].textContent, Engine: td[3].textContent, Device: td[4].textContent, RT: td[5].textContent,
			TPS: td[6].textContent, Max: td[7].textContent, Result: td[8].textContent, Class: tr.className,
			Simulated: !!td[0].querySelector('.badge-sim')};
	})`)
}

func rowByID(t *testing.T, rows []shownRow, id string) shownRow {
	t.Helper()
	for _, r := range rows {
		if r.ID == id {
			return r
		}
	}
	t.Fatalf("row %s is not shown; shown: %v", id, ids(rows))
	return shownRow{}
}

func ids(rows []shownRow) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.ID
	}
	return out
}

// setInput sets an input's value as a user would and fires its input event.
func setInput(t *testing.T, ctx context.Context, sel, value string) {
	t.Helper()
	eval[bool](t, ctx, fmt.Sprintf(`(() => { const e = document.querySelector(%q); e.value = %q; e.dispatchEvent(new Event('input', {bubbles: true})); return true; })()`, sel, value))
}
