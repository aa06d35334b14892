package controller

import (
	"github.com/vlmfleet/vlmfleet/controller/access"

	"net/http/httptest"
	"os"
	"testing"
)

// The join string carries the address devices reach the API at (the
// NATS URL a join answers: controller/identity's TestJoinNATSURL).
func TestJoinURL(t *testing.T) {
	hostname, _ := os.Hostname()
	for _, tc := range []struct {
		httpAddr, host, asked string
		hosts                 []string
		want                  string
	}{
		{"0.0.0.0:8080", "127.0.0.1:8080", "https://ctl.lab:9443/vf", nil, "https://ctl.lab:9443/vf"},
		{"0.0.0.0:8080", "ctl.lab:8080", "", nil, "https://ctl.lab:8080"},
		{"127.0.0.1:8080", "127.0.0.1:8080", "", []string{"ctl.lab"}, "https://127.0.0.1:8080"},
		{"0.0.0.0:8080", "127.0.0.1:8080", "", []string{"ctl.lab"}, "https://ctl.lab:8080"},
		{"0.0.0.0:8080", "localhost:8080", "", []string{"ctl.lab:9000"}, "https://ctl.lab:9000"},
		{"10.0.0.5:8080", "127.0.0.1:8080", "", nil, "https://10.0.0.5:8080"},
		{"0.0.0.0:8080", "127.0.0.1:8080", "", nil, "https://" + hostname + ":8080"},
	} {
		c := &Controller{opt: Options{HTTPAddr: tc.httpAddr}, sec: &access.Guard{Hosts: tc.hosts}}
		r := httptest.NewRequest("POST", "https://"+tc.host+"/api/join-tokens", nil)
		if got := c.joinURL(r, tc.asked); got != tc.want {
			t.Errorf("listening on %s, reached at %s, hosts %v, asked %q: %s, want %s", tc.httpAddr, tc.host, tc.hosts, tc.asked, got, tc.want)
		}
	}
}
