package client

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/vlmfleet/vlmfleet/internal/testutil"
)

type otherTransport struct{}

func (otherTransport) RoundTrip(*http.Request) (*http.Response, error) {
	return nil, http.ErrNotSupported
}

// A client trusts what WithCA or the environment names for the URL's
// host, refuses a bad pin or CA file, and says how to trust a controller
// it does not, and to use https:// with one that serves it.
func TestClientTLS(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"ok","tls":{"http":true,"nats":false}}`))
	}))
	defer srv.Close()
	cl, err := New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Health(t.Context()); err == nil || !strings.Contains(err.Error(), EnvCAFile) {
		t.Errorf("an untrusted server: %v, want the hint naming %s", err, EnvCAFile)
	}
	cl, err = New(srv.URL, WithTLS(srv.Client().Transport.(*http.Transport).TLSClientConfig))
	if err != nil {
		t.Fatal(err)
	}
	if h, err := cl.Health(t.Context()); err != nil || !h.TLS.HTTP {
		t.Errorf("WithTLS: %+v, %v", h, err)
	}

	env := func(k string) string {
		return map[string]string{EnvCAPin: "sha256:beef"}[k]
	}
	_, err = New(srv.URL, TLSFromEnv(env))
	testutil.WantError(t, err, "64 hex digits")
	_, err = New(srv.URL, WithCA("/nonexistent/ca.pem", ""))
	testutil.WantError(t, err, "CA file")
	_, err = New(srv.URL, WithHTTPClient(&http.Client{Transport: otherTransport{}}), WithCA("", "sha256:"+strings.Repeat("00", 32)))
	testutil.WantError(t, err, "*http.Transport")
	if _, err := New(srv.URL, TLSFromEnv(func(string) string { return "" })); err != nil {
		t.Errorf("no CA in the environment: %v", err)
	}

	e := &APIError{Status: http.StatusBadRequest, Message: "Client sent an HTTP request to an HTTPS server."}
	testutil.WantError(t, e, "use https://")
}
