package identity

import "testing"

// The NATS URL a join answers names the host the device used when the
// server listens on every address.
func TestJoinNATSURL(t *testing.T) {
	for _, tc := range []struct{ natsHost, host, want string }{
		{"0.0.0.0", "ctl.lab:8080", "tls://ctl.lab:4222"},
		{"", "[::1]:8080", "tls://[::1]:4222"},
		{"10.0.0.5", "ctl.lab:8080", "tls://127.0.0.1:4222"},
	} {
		c := &Registry{hooks: Hooks{NATSHost: func() string { return tc.natsHost }, NATSURL: func() string { return "tls://127.0.0.1:4222" }}}
		if got := c.natsURLFor(tc.host); got != tc.want {
			t.Errorf("NATS on %q, API reached at %s: %s, want %s", tc.natsHost, tc.host, got, tc.want)
		}
	}
}
