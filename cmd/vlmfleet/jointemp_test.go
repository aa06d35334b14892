package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// With neither log_dir nor spool_dir the join writes the credentials
// beside the spool's default, in <temp dir>/vlmfleet-spool-<uid>. Where
// another local user made that directory first, open to all, the join is
// refused before it spends a use or writes a file, saying whose the
// directory is; once it is gone, the same one-use token enrols the device,
// and its credentials are in a directory of its own.
func TestJoinIntoAnotherUsersTempDirSpendsNothing(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make a directory as another user (uid 65534); CI runs as root")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	l := startJoinLab(t, ctx)
	js := l.createToken(t, ctx)

	tmp := t.TempDir()
	if err := os.Chmod(tmp, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	top := filepath.Join(tmp, fmt.Sprintf("vlmfleet-spool-%d", os.Getuid()))
	if err := os.Mkdir(top, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(top, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(top, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	env := []string{"TMPDIR=" + tmp, envJoin + "=" + js.String()}
	args := []string{"agent", "--id", "j5", "--simulate", "Jetson AGX Orin", "--sim-models", "Cosmos3-Edge", "--join-only"}

	code, out, errs := cliProc(t, ctx, env, args...)
	if want := top + " belongs to uid 65534, not to this agent's uid"; code != 1 || !strings.Contains(errs, want) {
		t.Errorf("join into another user's directory: exit %d\n%s%s\nwant exit 1 saying %q", code, out, errs, want)
	}
	if entries, err := os.ReadDir(top); err != nil || len(entries) != 0 {
		t.Errorf("the refused join wrote %v in %s (%v)", entries, top, err)
	}
	if used := tokenUsed(t, ctx, l, js.TokenID); used != 0 {
		t.Errorf("the refused join spent %d uses of the token", used)
	}

	if err := os.RemoveAll(top); err != nil {
		t.Fatal(err)
	}
	code, out, errs = cliProc(t, ctx, env, args...)
	if want := "joined: credentials in " + filepath.Join(top, "j5.nk"); code != 0 || !strings.Contains(out, want) {
		t.Fatalf("join once the directory is gone: exit %d\n%s%s\nwant %q", code, out, errs, want)
	}
	if fi, err := os.Stat(top); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("%s: %v, %v; want a directory of the agent's, 0700", top, fi.Mode(), err)
	}
	if used := tokenUsed(t, ctx, l, js.TokenID); used != 1 {
		t.Errorf("the token has %d uses spent, want the join's 1", used)
	}
}

// tokenUsed is how many enrolments the controller counts for token id.
func tokenUsed(t *testing.T, ctx context.Context, l *joinLab, id string) int {
	t.Helper()
	tokens, err := l.cl.JoinTokens(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, tk := range tokens {
		if tk.ID == id {
			return tk.Used
		}
	}
	t.Fatalf("the controller lists no join token %s", id)
	return 0
}
