package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/vlmfleet/vlmfleet/controller"
	"github.com/vlmfleet/vlmfleet/harness/labtest"
	"github.com/vlmfleet/vlmfleet/internal/testutil"
)

func runArgs(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(args, &out, &errb, func(string) string { return "" })
	return code, out.String(), errb.String()
}

// agent-creds create writes credentials that sign the agent in, readable
// by their owner only, and refuses to overwrite a file (before asking the
// controller, so the agent's credentials stay as they were) unless
// forced; revoke ends them.
func TestAgentCredsCommand(t *testing.T) {
	l := labtest.Start(t, controller.Options{})
	url := l.Ctl.HTTPURL()
	t.Chdir(t.TempDir())

	code, out, errs := runArgs("agent-creds", "create", "a9", "--controller", url, "--token-file", l.TokenFile)
	if code != 0 || !strings.Contains(out, "--nats-credentials a9.nk") || !strings.Contains(out, l.Ctl.NATSURL()) {
		t.Fatalf("create: exit %d\n%s%s", code, out, errs)
	}
	fi, err := os.Stat("a9.nk")
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("a9.nk: %v, %v; want mode 0600", fi.Mode(), err)
	}
	signIn := func(file string) error {
		nc, err := nats.Connect(l.Ctl.NATSURL(), testutil.NkeyFile(t, file))
		if err == nil {
			nc.Close()
		}
		return err
	}
	if err := signIn("a9.nk"); err != nil {
		t.Fatalf("signing in with a9.nk: %v", err)
	}
	if code, _, errs := runArgs("agent-creds", "create", "--controller", url, "a9"); code != 1 || !strings.Contains(errs, "a9.nk exists; remove it or pass --force") {
		t.Fatalf("create over an existing file: exit %d: %s", code, errs)
	}
	if err := signIn("a9.nk"); err != nil {
		t.Fatalf("a refused create changed the agent's credentials: %v", err)
	}
	other := filepath.Join(t.TempDir(), "other.nk")
	if code, _, errs := runArgs("agent-creds", "create", "a9", "--controller", url, "--out", other, "--token-file", l.TokenFile); code != 0 {
		t.Fatalf("create --out: exit %d: %s", code, errs)
	}
	if err := signIn("a9.nk"); err == nil {
		t.Fatal("the replaced credentials still sign in")
	}
	if code, _, errs := runArgs("agent-creds", "create", "a9", "--controller", url, "--force", "--token-file", l.TokenFile); code != 0 {
		t.Fatalf("create --force: exit %d: %s", code, errs)
	}
	if err := signIn("a9.nk"); err != nil {
		t.Fatalf("signing in with the forced a9.nk: %v", err)
	}

	if code, out, errs := runArgs("agent-creds", "revoke", "a9", "--controller", url, "--token-file", l.TokenFile); code != 0 || !strings.Contains(out, "revoked agent a9's NATS credentials") {
		t.Fatalf("revoke: exit %d\n%s%s", code, out, errs)
	}
	if err := signIn("a9.nk"); err == nil {
		t.Fatal("revoked credentials still sign in")
	}
	if code, _, errs := runArgs("agent-creds", "revoke", "a9", "--controller", url, "--token-file", l.TokenFile); code != 1 || !strings.Contains(errs, "404") {
		t.Fatalf("revoke again: exit %d: %s", code, errs)
	}
	for _, args := range [][]string{{"agent-creds"}, {"agent-creds", "create"}, {"agent-creds", "revoke", "a", "b"}, {"agent-creds", "rotate", "a"}} {
		if code, _, errs := runArgs(args...); code != 2 {
			t.Errorf("%q: exit %d: %s, want 2", args, code, errs)
		}
	}
}

// The agent names its credentials file when it cannot use it.
func TestAgentCredentialsFlag(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing.nk")
	code, _, errs := runArgs("agent", "--simulate", "Jetson AGX Orin", "--nats-url", "nats://127.0.0.1:1", "--nats-credentials", missing)
	if code != 1 || !strings.Contains(errs, "nats_credentials "+missing) {
		t.Fatalf("exit %d: %s", code, errs)
	}
}
