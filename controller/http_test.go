package controller

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// A request that is wrong, or names what does not exist, is answered with
// its status and a JSON error saying why.
func TestAPIErrorStatuses(t *testing.T) {
	c := startController(t, t.TempDir())
	for _, tc := range []struct {
		method, path, body string
		status             int
		says               string
	}{
		{http.MethodPost, "/api/sweeps", strings.Repeat(" ", MaxSweepBody+1), http.StatusRequestEntityTooLarge, "request body over"},
		{http.MethodPost, "/api/sweeps", `{"workload":`, http.StatusBadRequest, "sweep"},
		{http.MethodPost, "/api/runs/import", `{"runs":[]}`, http.StatusBadRequest, "run"},
		{http.MethodGet, "/api/rejected?limit=-1", "", http.StatusBadRequest, `limit "-1": want a whole number`},
		{http.MethodGet, "/api/runs/nope", "", http.StatusNotFound, "not found"},
		{http.MethodGet, "/api/sweeps/nope", "", http.StatusNotFound, "not found"},
		{http.MethodDelete, "/api/sweeps/nope", "", http.StatusNotFound, "not found"},
		{http.MethodGet, "/api/jobs/nope", "", http.StatusNotFound, "not found"},
		{http.MethodDelete, "/api/jobs/nope", "", http.StatusNotFound, "not found"},
	} {
		req, err := http.NewRequest(tc.method, c.HTTPURL()+tc.path, strings.NewReader(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var answer struct{ Error string }
		if err := json.Unmarshal(data, &answer); err != nil || resp.StatusCode != tc.status || !strings.Contains(answer.Error, tc.says) {
			t.Errorf("%s %s: %s %s, want %d saying %q", tc.method, tc.path, resp.Status, data, tc.status, tc.says)
		}
	}
}
