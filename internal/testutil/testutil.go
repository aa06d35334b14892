// Package testutil holds the few helpers that tests of several packages
// share. Only tests import it.
package testutil

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Returned waits for what a goroutine sends on done once its context has
// ended: an error fails the test, and so does nothing within 10 s. what
// names the function the goroutine ran.
func Returned(t testing.TB, done <-chan error, what string) {
	t.Helper()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("%s: %v", what, err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("%s did not return after its context ended", what)
	}
}

// Status sends method to url, with body unless it is "", and returns the
// response's status code; the response body is closed unread.
func Status(t testing.TB, method, url, body string) int {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, r)
	if err != nil {
		t.Fatal(err)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	res.Body.Close()
	return res.StatusCode
}
