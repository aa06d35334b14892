package power

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// serveHelper plays vlmfleet-power.socket (Accept=yes): each connection
// runs the helper script with the connection as its stdin and stdout.
func serveHelper(t *testing.T) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "power.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { l.Close(); wg.Wait() })
	argv := helperScript(t)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			f, err := conn.(*net.UnixConn).File()
			conn.Close()
			if err != nil {
				t.Error(err)
				return
			}
			cmd := exec.Command(argv[0], argv[1:]...)
			cmd.Stdin, cmd.Stdout, cmd.Stderr = f, f, os.Stderr
			if err := cmd.Run(); err != nil {
				t.Errorf("helper: %v", err)
			}
			f.Close()
		}
	}()
	return sock
}

func TestSocketAsksTheHelper(t *testing.T) {
	ctx := testContext(t)
	opt, fakes := orinNX(t, nil)
	opt.Helper = Socket{Path: serveHelper(t)}
	j := NewJetson(opt)
	if err := j.Set(ctx, protocol.PowerSetting{Mode: "10W"}); err != nil {
		t.Fatal(err)
	}
	if got := switches(t, fakes); len(got) != 1 || got[0] != "-m 1 10W" {
		t.Errorf("nvpmodel switches %q", got)
	}
	err := opt.Helper.Do(ctx, "mode", "10W;reboot")
	if err == nil || !strings.Contains(err.Error(), `mode name "10W;reboot": letters, digits`) {
		t.Errorf("a bad request: %v", err)
	}
	if err := (Socket{Path: filepath.Join(t.TempDir(), "none.sock")}).Do(ctx, "mode", "MAXN"); err == nil ||
		!strings.Contains(err.Error(), "deploy/install.sh agent --power-switch") {
		t.Errorf("no socket: %v", err)
	}
}

func TestCommandAnswers(t *testing.T) {
	ctx := testContext(t)
	for _, tc := range []struct {
		script, want string
	}{
		{"echo ok", ""},
		{"echo 'error: no such mode'; exit 1", "no such mode"},
		{"echo hello", `the power helper answered "hello"`},
		{"echo boom >&2; exit 3", "exit status 3: boom"},
	} {
		err := Command{Argv: []string{"/bin/sh", "-c", tc.script, "helper"}}.Do(ctx, "mode", "X")
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: %v, want %q", tc.script, err, tc.want)
		}
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := (Command{Argv: []string{"/bin/sleep", "10"}}).Do(cctx); err == nil || !errors.Is(cctx.Err(), context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}
