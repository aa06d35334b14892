package client

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vlmfleet/vlmfleet/controller/api"
)

func TestToken(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	flagFile, envFile := write("flag", "from-the-flag\n"), write("env", " from-the-env-file \n")
	env := func(vars map[string]string) func(string) string { return func(k string) string { return vars[k] } }
	for _, c := range []struct {
		flag      string
		env       map[string]string
		want, err string
	}{
		{flagFile, map[string]string{EnvToken: "from-env"}, "from-the-flag", ""},
		{"", map[string]string{EnvToken: "from-env", EnvTokenFile: envFile}, "from-env", ""},
		{"", map[string]string{EnvTokenFile: envFile}, "from-the-env-file", ""},
		{filepath.Join(dir, "missing"), nil, "", "--token-file: open"},
		{"", map[string]string{EnvTokenFile: filepath.Join(dir, "missing")}, "", EnvTokenFile + ": open"},
		{write("two", "a b"), nil, "", "want the API token alone on one line"},
		{write("empty", "\n"), nil, "", "want the API token alone on one line"},
	} {
		got, err := Token(c.flag, env(c.env))
		checkResult(t, fmt.Sprintf("Token(%q, %v)", c.flag, c.env), got, err, c.want, c.err)
	}

	// Nothing given: the default data dir's token file, if there is one.
	t.Chdir(dir)
	if got, err := Token("", nil); got != "" || err != nil {
		t.Errorf("no token anywhere: %q, %v; want none", got, err)
	}
	if err := os.MkdirAll(filepath.Dir(DefaultTokenFile), 0o700); err != nil {
		t.Fatal(err)
	}
	write(DefaultTokenFile, "local-token\n")
	if got, err := Token("", env(nil)); got != "local-token" || err != nil {
		t.Errorf("default token file: %q, %v", got, err)
	}
}

// The client sends its token; without it a change gets a 401 whose error
// says how to give the token.
func TestClientSendsTheToken(t *testing.T) {
	l := newLab(t)
	entries := []api.ImportEntry{{Origin: "a.json", Run: resultDoc("run-a")}}
	if _, err := l.cl.Import(l.Ctx, entries); err != nil {
		t.Fatalf("import with the token: %v", err)
	}
	for _, tok := range []string{"", "wrong-token-0123456789"} {
		cl, _ := New(l.Ctl.HTTPURL(), WithToken(tok))
		_, err := cl.SubmitSweep(l.Ctx, smallSweep())
		var api *APIError
		if !errors.As(err, &api) || api.Status != http.StatusUnauthorized || !strings.Contains(err.Error(), TokenHint) {
			t.Errorf("token %q: %v, want a 401 ending with the hint", tok, err)
		}
		if _, err := cl.Runs(l.Ctx, RunFilter{}); err != nil {
			t.Errorf("a read on loopback with token %q: %v", tok, err)
		}
	}
	if !strings.Contains(TokenHint, "--token-file <data-dir>/api-token or set VLMFLEET_TOKEN") {
		t.Errorf("hint %q", TokenHint)
	}
}

// A document over the controller's limit for one is refused before
// anything is sent, naming it.
func TestImportChecksEachDocument(t *testing.T) {
	cl, _ := New("http://127.0.0.1:1")
	big := resultDoc("big")
	big.Config.Model = strings.Repeat("x", api.MaxImportDocument)
	_, err := cl.Import(t.Context(), []api.ImportEntry{{Origin: "a.json", Run: resultDoc("a")}, {Origin: "big.json", Run: big}})
	if err == nil || !strings.Contains(err.Error(), "runs[1] (big.json) is 8.0 MiB, over the 8 MiB") {
		t.Errorf("got %v", err)
	}
}
