package controller

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/vlmfleet/vlmfleet/internal/testutil"
)

// The profiles need the token even for a read on loopback, where the rest
// of the API reads without it.
func TestProfilesNeedTheToken(t *testing.T) {
	c := startController(t, t.TempDir())
	url := c.HTTPURL() + "/debug/pprof/heap?debug=1"
	if code := testutil.Status(t, http.MethodGet, url, ""); code != http.StatusUnauthorized {
		t.Errorf("heap profile without the token: %d, want 401", code)
	}
	req := testutil.NewRequest(t, http.MethodGet, url, "")
	req.Header.Set("Authorization", "Bearer "+c.APIToken())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	_, _ = io.Copy(&b, resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(b.String(), "heap profile") {
		t.Errorf("heap profile with the token: %d %.200s", resp.StatusCode, b.String())
	}
}
