package controller

import (
	"net/http"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/vlmfleet/vlmfleet/explorer"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// Every controller serves the published profile lines, read as the
// explorer's other answers are: off loopback only with the token.
func TestControllerServesThePublishedProfiles(t *testing.T) {
	c := startControllerWith(t, Options{DataDir: t.TempDir(), HTTPAddr: "0.0.0.0:0", TLS: TLSOff,
		Explorer: func(runs RunSource) http.Handler { return explorer.NewHandler(runs, zerolog.Nop()) }})
	u := c.HTTPURL() + explorer.PathProfiles
	code, body, _ := send(t, http.MethodGet, u, "", nil)
	if code != http.StatusUnauthorized || !strings.Contains(errorOf(body), "--public-read") {
		t.Errorf("GET %s off loopback without the token: %d %s, want 401", explorer.PathProfiles, code, body)
	}
	code, body, _ = send(t, http.MethodGet, u+"?model=nemoretriever", "", map[string]string{"Authorization": "Bearer " + c.APIToken()})
	if code != http.StatusOK {
		t.Fatalf("GET with the token: %d %s", code, body)
	}
	res, err := protocol.DecodeProfileRows([]byte(body))
	if err != nil || len(res.Rows) != 24 {
		t.Fatalf("%v, %d rows; want nemoretriever-parse's 24 published lines", err, len(res.Rows))
	}
	code, body, _ = send(t, http.MethodGet, u+"?tp=0", "", map[string]string{"Authorization": "Bearer " + c.APIToken()})
	if code != http.StatusBadRequest || !strings.Contains(errorOf(body), "tp: ") {
		t.Errorf("?tp=0: %d %s, want 400 naming tp", code, body)
	}
}
