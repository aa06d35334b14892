package controller

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/rs/zerolog"

	"github.com/vlmfleet/vlmfleet/internal/testutil/natstest"
	"github.com/vlmfleet/vlmfleet/internal/tlsca"
)

// logLines hands each log line the controller writes to a channel, so
// that a test waits on what the controller says.
type logLines chan string

func (l logLines) Write(p []byte) (int, error) {
	select {
	case l <- string(p):
	default:
	}
	return len(p), nil
}

// freePort is a loopback port nothing listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startNATSOn starts a JetStream server on the port, with opts' TLS.
func startNATSOn(t *testing.T, port int, opts *server.Options) *server.Server {
	t.Helper()
	opts.Port, opts.JetStream, opts.StoreDir = port, true, t.TempDir()
	return natstest.Start(t, opts)
}

func newControllerLogging(t *testing.T, opt Options, lines logLines) *Controller {
	t.Helper()
	opt.DataDir, opt.NATSListen, opt.HTTPAddr = t.TempDir(), "127.0.0.1:-1", "127.0.0.1:0"
	opt.Log = zerolog.New(zerolog.MultiLevelWriter(zerolog.NewTestWriter(t), lines)).Level(zerolog.WarnLevel)
	c, err := New(opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// A controller started before its external NATS server waits for it,
// saying so, and is ready once the server is.
func TestControllerWaitsForItsExternalNATS(t *testing.T) {
	port := freePort(t)
	lines := make(logLines, 64)
	c := newControllerLogging(t, Options{NATSURL: "nats://127.0.0.1:" + strconv.Itoa(port)}, lines)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	started := make(chan error, 1)
	go func() { started <- c.Start(ctx) }()
	for waiting := false; !waiting; {
		select {
		case l := <-lines:
			waiting = strings.Contains(l, "does not take connections yet")
		case err := <-started:
			t.Fatalf("Start returned before the server was up: %v", err)
		case <-ctx.Done():
			t.Fatal("no word of waiting for the NATS server")
		}
	}
	startNATSOn(t, port, &server.Options{})
	if err := <-started; err != nil {
		t.Fatalf("Start, once the server was up: %v", err)
	}
	announced(t, c, "late-1", "d1")
	if _, err := c.store.Agent("late-1"); err != nil {
		t.Fatal(err)
	}
}

// The connection to a tls:// server checks its certificate against the CA
// pinned or in a file; a server whose certificate is not that CA's ends
// the start at once, with why, rather than after the wait.
func TestControllerExternalNATSOverTLS(t *testing.T) {
	ca, err := tlsca.Open(t.TempDir(), []string{"127.0.0.1"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	startNATSOn(t, port, &server.Options{TLS: true, TLSConfig: ca.ServerConfig(), TLSTimeout: 5})
	url := "tls://127.0.0.1:" + strconv.Itoa(port)
	for _, opt := range []Options{{NATSURL: url, NATSCAPin: ca.Fingerprint()}, {NATSURL: url, NATSCA: ca.CAFile()}} {
		c := newControllerLogging(t, opt, make(logLines))
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if err := c.Start(ctx); err != nil {
			t.Fatalf("pin %q, CA file %q: %v", opt.NATSCAPin, opt.NATSCA, err)
		}
		cancel()
		_ = c.Close()
	}
	other, err := tlsca.Open(t.TempDir(), []string{"127.0.0.1"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	c := newControllerLogging(t, Options{NATSURL: url, NATSCAPin: other.Fingerprint()}, make(logLines))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	began := time.Now()
	err = c.Start(ctx)
	if err == nil || !strings.Contains(err.Error(), "not trusted") {
		t.Fatalf("another CA's pin: %v, want not trusted", err)
	}
	if took := time.Since(began); took > 10*time.Second {
		t.Errorf("an untrusted server took %v to refuse; waiting cannot fix it", took)
	}
	if _, err := New(Options{DataDir: t.TempDir(), NATSCAPin: ca.Fingerprint()}); err == nil || !strings.Contains(err.Error(), "external server") {
		t.Errorf("a pin without --nats-url: %v", err)
	}
}
