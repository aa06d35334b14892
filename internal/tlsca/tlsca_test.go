package tlsca

import (
	"crypto/tls"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// serve accepts TLS connections with cfg until the test ends and completes
// each handshake.
func serve(t *testing.T, cfg *tls.Config) string {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.(*tls.Conn).Handshake()
			c.Close()
		}
	}()
	return ln.Addr().String()
}

func dial(addr string, cfg *tls.Config) error {
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, cfg)
	if err != nil {
		return err
	}
	return c.Close()
}

func TestPinnedAndFileTrustAndNothingElse(t *testing.T) {
	dir := t.TempDir()
	a, err := Open(dir, []string{"127.0.0.1", "localhost", "controller.lab"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	addr := serve(t, a.ServerConfig())
	for _, c := range []struct {
		name, caFile, pin, server string
		ok                        bool
	}{
		{"pinned", "", a.Fingerprint(), "127.0.0.1", true},
		{"pinned, upper case with colons", "", "SHA256:" + strings.ToUpper(strings.TrimPrefix(a.Fingerprint(), "sha256:")), "controller.lab", true},
		{"CA file", a.CAFile(), "", "localhost", true},
		{"wrong pin", "", "sha256:" + strings.Repeat("00", 32), "127.0.0.1", false},
		{"pinned, name not in the certificate", "", a.Fingerprint(), "evil.example", false},
		{"system roots only", "", "", "127.0.0.1", false},
	} {
		cfg, err := ClientConfig(c.caFile, c.pin, c.server)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if err := dial(addr, cfg); (err == nil) != c.ok {
			t.Errorf("%s: dial error %v, want success %v", c.name, err, c.ok)
		}
	}
	if _, err := ClientConfig("", "sha256:beef", ""); err == nil || !strings.Contains(err.Error(), "64 hex digits") {
		t.Errorf("a short pin: %v", err)
	}
}

func TestCAIsKeptAndServerCertFollowsTheNames(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	a, err := Open(dir, []string{"127.0.0.1"}, now)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{caKeyFile, serverKeyFile} {
		st, err := os.Stat(filepath.Join(dir, f))
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v (%v), want 0600", f, st.Mode().Perm(), err)
		}
	}
	b, err := Open(dir, []string{"127.0.0.1"}, now)
	if err != nil {
		t.Fatal(err)
	}
	if a.Fingerprint() != b.Fingerprint() || string(a.server.Certificate[0]) != string(b.server.Certificate[0]) {
		t.Error("a second start made a new CA or server certificate for the same names")
	}
	c, err := Open(dir, []string{"127.0.0.1", "controller.lab"}, now)
	if err != nil {
		t.Fatal(err)
	}
	if c.Fingerprint() != a.Fingerprint() || string(c.server.Certificate[0]) == string(a.server.Certificate[0]) {
		t.Error("a new name must get a new server certificate from the same CA")
	}
	if err := c.server.Leaf.VerifyHostname("controller.lab"); err != nil {
		t.Errorf("new server certificate: %v", err)
	}
	late, err := Open(dir, []string{"127.0.0.1", "controller.lab"}, now.Add(serverLifetime))
	if err != nil {
		t.Fatal(err)
	}
	if string(late.server.Certificate[0]) == string(c.server.Certificate[0]) {
		t.Error("a server certificate near its end was kept")
	}
}

// A key that others may read is refused with the chmod that fixes it. A
// key made anew (new names) is 0600 whatever the file it replaces was,
// and replaces a symbolic link in its place rather than writing through
// it.
func TestKeysArePrivate(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	if _, err := Open(dir, []string{"127.0.0.1"}, now); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{caKeyFile, serverKeyFile} {
		p := filepath.Join(dir, f)
		if err := os.Chmod(p, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Open(dir, []string{"127.0.0.1"}, now)
		if want := p + " may be read by others (mode 0644): run chmod 600 " + p; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s at 0644: %v; want an error saying %q", f, err, want)
		}
		if err := os.Chmod(p, 0o600); err != nil {
			t.Fatal(err)
		}
	}

	key := filepath.Join(dir, serverKeyFile)
	if err := os.Chmod(key, 0o400); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, []string{"127.0.0.1", "new.lab"}, now); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(key); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("the server key made for a new name: mode %v (%v), want 0600", st.Mode().Perm(), err)
	}

	// The link names a copy of the key, so that it loads, and a new name
	// has the pair made anew.
	victim := filepath.Join(t.TempDir(), "victim")
	old, err := os.ReadFile(key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(victim, old, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(key); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, key); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, []string{"127.0.0.1", "new.lab", "newer.lab"}, now); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(victim); string(b) != string(old) {
		t.Error("the new server key was written through the link in its place, into the file it named")
	}
	if st, err := os.Lstat(key); err != nil || !st.Mode().IsRegular() || st.Mode().Perm() != 0o600 {
		t.Errorf("the server key after replacing a link: %v (%v), want a regular file at 0600", st.Mode(), err)
	}
}
