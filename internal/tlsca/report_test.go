package tlsca

import (
	"errors"
	"sync"
	"testing"
	"time"
)

// Every failed verification reaches report, whichever trust the config
// has; a handshake that succeeds reports nothing.
func TestReportFailuresSeesEveryFailedVerification(t *testing.T) {
	a, err := Open(t.TempDir(), []string{"127.0.0.1"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	other, err := Open(t.TempDir(), []string{"127.0.0.1"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	addr := serve(t, a.ServerConfig())
	for _, c := range []struct {
		name, caFile, pin, server string
		ok                        bool
	}{
		{"pinned", "", a.Fingerprint(), "127.0.0.1", true},
		{"CA file", a.CAFile(), "", "127.0.0.1", true},
		{"another CA's pin", "", other.Fingerprint(), "127.0.0.1", false},
		{"another CA's file", other.CAFile(), "", "127.0.0.1", false},
		{"CA file, name not in the certificate", a.CAFile(), "", "evil.example", false},
		{"system roots", "", "", "127.0.0.1", false},
	} {
		cfg, err := ClientConfig(c.caFile, c.pin, c.server)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var mu sync.Mutex
		var reported []error
		cfg = ReportFailures(cfg, func(err error) { mu.Lock(); reported = append(reported, err); mu.Unlock() })
		err = dial(addr, cfg)
		mu.Lock()
		n := len(reported)
		mu.Unlock()
		switch {
		case c.ok && (err != nil || n != 0):
			t.Errorf("%s: %v, %d reports; want a connection and none", c.name, err, n)
		case !c.ok && (err == nil || n != 1 || !errors.Is(reported[0], ErrUntrusted)):
			t.Errorf("%s: %v, reports %v; want the failure, reported once", c.name, err, reported)
		}
	}
}
