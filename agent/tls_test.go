package agent

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/vlmfleet/vlmfleet/internal/testutil"
)

// nats_ca and nats_ca_pin come from YAML; either makes the connection TLS
// for the URL's host, a wrong one is an error before connecting, and
// neither leaves TLS to the URL and the server.
func TestNATSTLSConfig(t *testing.T) {
	pin := "sha256:" + strings.Repeat("ab", 32)
	cfg, err := ParseConfig([]byte("id: a1\nnats_url: tls://controller.lab:4222\nnats_ca_pin: " + pin + "\nnats_ca: /etc/vlmfleet/ca.pem\n"))
	if err != nil || cfg.NATSCAPin != pin || cfg.NATSCA != "/etc/vlmfleet/ca.pem" {
		t.Fatalf("from YAML: %+v, %v", cfg, err)
	}
	cfg.NATSCA = ""
	if opt, err := cfg.natsTLS(); err != nil || opt == nil {
		t.Fatalf("pinned: %v, %v", opt, err)
	}
	if opt, err := (Config{NATSURL: "tls://c:4222"}).natsTLS(); opt != nil || err != nil {
		t.Fatalf("neither: %v, %v; want no option", opt, err)
	}
	dir := t.TempDir()
	for name, c := range map[string]struct {
		cfg  Config
		want string
	}{
		"short pin":    {Config{NATSCAPin: "sha256:beef"}, "64 hex digits"},
		"missing file": {Config{NATSCA: filepath.Join(dir, "none.pem")}, "CA file"},
		"not a PEM CA": {Config{NATSCA: testutil.WriteFile(t, filepath.Join(dir, "x.pem"), "hello\n")}, "no PEM certificate"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := c.cfg.natsTLS()
			testutil.WantError(t, err, c.want)
		})
	}
	for url, want := range map[string]string{
		"tls://controller.lab:4222":              "controller.lab",
		"nats://u:p@10.0.0.5:4222,nats://b:4222": "10.0.0.5",
		"[::1]:4222":                             "::1",
		"tls://controller.lab":                   "controller.lab",
	} {
		if got := natsServerName(url); got != want {
			t.Errorf("natsServerName(%q) = %q, want %q", url, got, want)
		}
	}
	e := &UntrustedError{AgentID: "a1", URL: "tls://u:secret@c:4222", Err: nats.ErrTLS}
	testutil.WantError(t, e, "the controller's certificate is not trusted: copy its CA file (ca.pem) and pass --nats-ca")
	if strings.Contains(e.Error(), "secret") {
		t.Errorf("the error shows the URL's password: %v", e)
	}
}
