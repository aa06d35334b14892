package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/vlmfleet/vlmfleet/controller"
	"github.com/vlmfleet/vlmfleet/controller/client"
	"github.com/vlmfleet/vlmfleet/harness/labtest"
)

// The CLI reaches a controller with TLS when $VLMFLEET_CA_PIN or
// $VLMFLEET_CA_FILE says which CA to trust, and says so when neither
// does; agent-creds prints the pin in the agent's command, and the agent
// given another pin stops with what to do.
func TestCLIOverTLS(t *testing.T) {
	l := labtest.Start(t, controller.Options{TLS: controller.TLSOn})
	t.Chdir(t.TempDir())
	env := map[string]string{client.EnvURL: l.Ctl.HTTPURL(), client.EnvTokenFile: l.TokenFile}
	runEnv := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := run(args, &out, &errb, func(k string) string { return env[k] })
		return code, out.String(), errb.String()
	}

	if code, _, errs := runEnv("agent-creds", "create", "a9"); code != 1 || !strings.Contains(errs, client.EnvCAPin) {
		t.Fatalf("create without trusting the controller: exit %d: %s", code, errs)
	}
	for _, trust := range []map[string]string{{client.EnvCAPin: l.Ctl.TLSFingerprint()}, {client.EnvCAFile: l.Ctl.CAFile()}} {
		for k, v := range trust {
			env[k] = v
		}
		code, out, errs := runEnv("agent-creds", "create", "a9", "--force")
		if code != 0 || !strings.Contains(out, "--nats-ca-pin "+l.Ctl.TLSFingerprint()) || !strings.Contains(out, "tls://") {
			t.Fatalf("create trusting %v: exit %d\n%s%s", trust, code, out, errs)
		}
		for k := range trust {
			delete(env, k)
		}
	}
	code, _, errs := runEnv("agent", "--simulate", "Jetson AGX Orin", "--id", "a9", "--nats-url", l.Ctl.NATSURL(),
		"--nats-credentials", "a9.nk", "--nats-ca-pin", "sha256:"+strings.Repeat("00", 32))
	if code != 1 || !strings.Contains(errs, "the controller's certificate is not trusted") {
		t.Fatalf("agent with another pin: exit %d: %s", code, errs)
	}
}
