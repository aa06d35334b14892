// Package browsertest finds and starts the headless chromium that browser
// tests drive. Whether a test without chromium skips or fails is the
// caller's to say. Only tests import it.
package browsertest

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Path is chromium's path: $VLMFLEET_CHROMIUM, else the first of
// /usr/bin/chromium, chromium, chromium-browser and google-chrome found.
func Path() (string, error) {
	if p := os.Getenv("VLMFLEET_CHROMIUM"); p != "" {
		return p, nil
	}
	for _, name := range []string{"/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", errors.New("no chromium on PATH (scripts/test installs Debian's chromium)")
}

// Start returns a context for a headless chromium at path whose profile
// is in dir, with the options extra after the usual ones, and the
// function that closes it. The browser starts with the first action run
// in the context, and lives as long as the context that action ran in.
func Start(path, dir string, extra ...chromedp.ExecAllocatorOption) (context.Context, context.CancelFunc) {
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.UserDataDir(dir))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), append(opts, extra...)...)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	return bctx, func() {
		cancelBrowser()
		cancelAlloc()
	}
}

// Open starts a headless chromium at path for the test, its profile in a
// temporary folder, and returns a context for it that ends after
// timeout; the browser closes when the test ends.
func Open(t testing.TB, path string, timeout time.Duration) context.Context {
	t.Helper()
	bctx, closeBrowser := Start(path, t.TempDir())
	t.Cleanup(closeBrowser)
	ctx, cancel := context.WithTimeout(bctx, timeout)
	t.Cleanup(cancel)
	return ctx
}

// Poller is a wait, in ctx's page, for a JavaScript condition to hold:
// checked every 50 ms for up to 20 s, failing t with the condition when
// it never does.
func Poller(t testing.TB, ctx context.Context) func(js string) {
	return func(js string) {
		t.Helper()
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](js, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(20*time.Second))); err != nil {
			t.Fatalf("waiting for %s: %v", js, err)
		}
	}
}
