package simlab_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/agent"
	"github.com/vlmfleet/vlmfleet/controller"
	"github.com/vlmfleet/vlmfleet/controller/client"
	"github.com/vlmfleet/vlmfleet/harness/simlab"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// With TLS on, an agent that pins the controller's CA runs a job end to
// end; one with another pin, or that trusts nothing, stops at once with an
// error saying how to trust the controller; an agent that wants TLS from
// a plain server is told so. The API client reads the controller over
// https with the CA file or the pin, and is refused without either.
func TestLabOverTLS(t *testing.T) {
	l := newLab(t, testContext(t, 90*time.Second), simlab.Options{TLS: controller.TLSOn})
	ctl := l.Controller()
	if !strings.HasPrefix(ctl.NATSURL(), "tls://") || !strings.HasPrefix(ctl.HTTPURL(), "https://") {
		t.Fatalf("URLs %s %s, want tls:// and https://", ctl.NATSURL(), ctl.HTTPURL())
	}
	l.startAgent(agx("tls-agx")) // pins ctl.TLSFingerprint(), as an operator does
	l.waitState(l.submit("tls-agx", tinyWorkload(1)), protocol.JobCompleted, 1)

	seed, err := ctl.EnrolAgent(l.ctx, "untrusting")
	if err != nil {
		t.Fatal(err)
	}
	deps, err := agent.SimulatedDeployments("Jetson AGX Orin", 50, "Cosmos3-Edge")
	if err != nil {
		t.Fatal(err)
	}
	run := func(url, caFile, pin string) error {
		a, err := agent.New(agent.Config{ID: "untrusting", NATSURL: url, NATSSeed: seed, NATSCA: caFile, NATSCAPin: pin,
			Deployments: deps, Simulate: "Jetson AGX Orin", SimSpeedup: 50, LogDir: t.TempDir()}, agent.Options{})
		if err != nil {
			t.Fatal(err)
		}
		// It stops on its own: the context is a bound, not the way out.
		ctx, cancel := context.WithTimeout(l.ctx, 20*time.Second)
		defer cancel()
		return a.Run(ctx)
	}
	other := "sha256:" + strings.Repeat("0f", 32)
	for name, c := range map[string]struct{ url, pin, want string }{
		"another pin":    {ctl.NATSURL(), other, "not the pinned CA " + other},
		"no trust":       {ctl.NATSURL(), "", "the controller's certificate is not trusted: copy its CA file (ca.pem) and pass --nats-ca, or pin it with --nats-ca-pin"},
		"nats:// no CA":  {strings.Replace(ctl.NATSURL(), "tls://", "nats://", 1), "", "--nats-ca-pin sha256:"},
		"a plain server": {newLab(t, l.ctx, simlab.Options{}).Controller().NATSURL(), ctl.TLSFingerprint(), "offers no TLS"},
	} {
		err := run(c.url, "", c.pin)
		var ue *agent.UntrustedError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: agent ended with %v, want an *UntrustedError saying %q", name, err, c.want)
		}
	}

	for name, opt := range map[string]client.Option{
		"CA file": client.WithCA(ctl.CAFile(), ""),
		"pin":     client.WithCA("", ctl.TLSFingerprint()),
		"env":     client.TLSFromEnv(func(k string) string { return map[string]string{client.EnvCAPin: ctl.TLSFingerprint()}[k] }),
	} {
		cl, err := client.New(ctl.HTTPURL(), opt)
		if err != nil {
			t.Fatal(err)
		}
		h, err := cl.Health(l.ctx)
		if err != nil || !h.TLS.HTTP || !h.TLS.NATS || h.TLS.CAFingerprint != ctl.TLSFingerprint() {
			t.Errorf("%s: health %+v, %v", name, h, err)
		}
	}
	cl, err := client.New(ctl.HTTPURL())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Health(l.ctx); err == nil || !strings.Contains(err.Error(), client.EnvCAPin) {
		t.Errorf("a client that trusts nothing: %v, want an error naming %s", err, client.EnvCAPin)
	}
	if _, err := client.New(ctl.HTTPURL(), client.WithCA("", "sha256:beef")); err == nil {
		t.Error("a bad pin was accepted")
	}
}
