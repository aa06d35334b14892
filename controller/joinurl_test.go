package controller

import (
	"github.com/vlmfleet/vlmfleet/controller/access"

	"net/http/httptest"
	"os"
	"testing"
)

// The join string carries the address devices reach the API at; the NATS
// URL a join answers names the host the device used when the server
// listens on every address.
func TestJoinURLAndNATSURL(t *testing.T) {
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
	for _, tc := range []struct{ natsHost, host, want string }{
		{"0.0.0.0", "ctl.lab:8080", "tls://ctl.lab:4222"},
		{"", "[::1]:8080", "tls://[::1]:4222"},
		{"10.0.0.5", "ctl.lab:8080", "tls://127.0.0.1:4222"},
	} {
		c := &Controller{natsHost: tc.natsHost, natsURL: "tls://127.0.0.1:4222"}
		if got := c.natsURLFor(tc.host); got != tc.want {
			t.Errorf("NATS on %q, API reached at %s: %s, want %s", tc.natsHost, tc.host, got, tc.want)
		}
	}
}
