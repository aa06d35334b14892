package agent

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/vlmfleet/vlmfleet/internal/testutil"
)

func newSeed(t *testing.T) string {
	seed, _ := testutil.NewUser(t)
	return seed
}

// Credentials are written for their owner only, never over a file unless
// forced, and read back by the agent's configuration.
func TestWriteCredentials(t *testing.T) {
	path := filepath.Join(t.TempDir(), CredentialsFile("a1"))
	seed := newSeed(t)
	if err := WriteCredentials(path, seed, false); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("credentials file mode %v, %v; want 0600", fi.Mode(), err)
	}
	testutil.WantError(t, WriteCredentials(path, newSeed(t), false), "exists; remove it or pass --force")
	if data, _ := os.ReadFile(path); strings.TrimSpace(string(data)) != seed {
		t.Fatal("a refused write changed the file")
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	other := newSeed(t)
	if err := WriteCredentials(path, other, true); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(path); strings.TrimSpace(string(data)) != other {
		t.Fatal("--force did not replace the credentials")
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Fatalf("replaced credentials file mode %v, want 0600", fi.Mode())
	}
	testutil.WantError(t, WriteCredentials(filepath.Join(t.TempDir(), "x.nk"), "not a seed", false), "not an nkey seed")

	cfg, err := ParseConfig([]byte("id: a1\nnats_credentials: " + path + "\n"))
	if err != nil || cfg.NATSCredentials != path {
		t.Fatalf("nats_credentials from YAML: %q, %v", cfg.NATSCredentials, err)
	}
	if opt, err := cfg.natsAuth(); err != nil || opt == nil {
		t.Fatalf("credentials from %s: %v", path, err)
	}
}

func TestCredentialsConfigErrors(t *testing.T) {
	dir := t.TempDir()
	bad := testutil.WriteFile(t, filepath.Join(dir, "bad.nk"), "hello\n")
	for name, tc := range map[string]struct {
		cfg  Config
		want string
	}{
		"missing file": {Config{ID: "a1", NATSCredentials: filepath.Join(dir, "none.nk")}, "nats_credentials"},
		"not a seed":   {Config{ID: "a1", NATSCredentials: bad}, "vlmfleet agent-creds create a1"},
		"bad seed":     {Config{ID: "a1", NATSSeed: "SUnope"}, "nats seed"},
		"both":         {Config{ID: "a1", NATSCredentials: bad, NATSSeed: newSeed(t)}, "exclude each other"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := tc.cfg.natsAuth()
			testutil.WantError(t, err, tc.want)
		})
	}
	if opt, err := (Config{ID: "a1"}).natsAuth(); opt != nil || err != nil {
		t.Fatalf("no credentials: %v, %v; want none", opt, err)
	}
}

// A refusal says what to do: create credentials when the agent has none,
// new ones when its own were refused, none for an open server.
func TestRefusedErrorSaysWhatToDo(t *testing.T) {
	for _, tc := range []struct {
		err  RefusedError
		want string
	}{
		{RefusedError{AgentID: "a1", URL: "nats://u:secret@c:4222", Err: nats.ErrAuthorization},
			"the controller requires credentials: create them with `vlmfleet agent-creds create a1`"},
		{RefusedError{AgentID: "a1", URL: "nats://c:4222", Credentials: "/etc/a1.nk", Err: nats.ErrAuthorization},
			"refused agent a1's credentials /etc/a1.nk"},
		{RefusedError{AgentID: "a1", URL: "nats://c:4222", Credentials: "/etc/a1.nk", Err: nats.ErrNkeysNotSupported},
			"without --nats-credentials"},
	} {
		testutil.WantError(t, &tc.err, tc.want)
		if strings.Contains(tc.err.Error(), "secret") {
			t.Errorf("the error shows the URL's password: %v", &tc.err)
		}
		if !errors.Is(&tc.err, tc.err.Err) {
			t.Errorf("%v does not unwrap to %v", &tc.err, tc.err.Err)
		}
	}
}
