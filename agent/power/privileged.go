package power

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// Privileged is the narrow path to root that switches the device: the
// agent asks for one change ("mode 15W", "limit 300", "limit 300 1"), the
// helper checks it against what the device lists and makes it. The agent
// itself runs unprivileged (NoNewPrivileges): see docs/operations.md.
type Privileged interface {
	Do(ctx context.Context, args ...string) error
	// String says what the path is, for errors and logs.
	String() string
}

// maxAnswer bounds what the helper's answer is read of.
const maxAnswer = 4096

// Socket asks the socket-activated helper (vlmfleet-power.socket): one
// request line, one answer line, "ok" or "error: ...".
type Socket struct{ Path string }

func (s Socket) String() string { return "the power helper at " + s.Path }

// Do sends one request and reads its answer; ctx bounds both.
func (s Socket) Do(ctx context.Context, args ...string) error {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", s.Path)
	if err != nil {
		return fmt.Errorf("%s: %w (is vlmfleet-power.socket installed and the agent's user in group vlmfleet? deploy/install.sh agent --power-switch)", s, err)
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Now()) })
	defer stop()
	if _, err := io.WriteString(conn, strings.Join(args, " ")+"\n"); err != nil {
		return fmt.Errorf("%s: send %q: %w", s, strings.Join(args, " "), err)
	}
	// The helper reads to the end of the request: close our side of it.
	if uc, ok := conn.(*net.UnixConn); ok {
		_ = uc.CloseWrite()
	}
	line, err := bufio.NewReader(io.LimitReader(conn, maxAnswer)).ReadString('\n')
	if err != nil && !(errors.Is(err, io.EOF) && line != "") {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return fmt.Errorf("%s: %q: no answer: %w", s, strings.Join(args, " "), err)
	}
	return answer(strings.TrimSpace(line), args)
}

// Command runs the helper as a process: Argv then the request as
// arguments ("mode", "15W"), never through a shell. It succeeds when the
// process exits 0 and its last line is "ok". For hosts without systemd
// and for tests; Argv comes only from the agent's local configuration.
type Command struct{ Argv []string }

func (c Command) String() string { return "the power command " + strings.Join(c.Argv, " ") }

// Do runs the command once.
func (c Command) Do(ctx context.Context, args ...string) error {
	cmd := exec.CommandContext(ctx, c.Argv[0], append(append([]string(nil), c.Argv[1:]...), args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 2 * time.Second
	err := cmd.Run()
	text := strings.TrimSpace(out.String())
	last := text
	if i := strings.LastIndexByte(text, '\n'); i >= 0 {
		last = strings.TrimSpace(text[i+1:])
	}
	if err != nil {
		if strings.HasPrefix(last, "error:") {
			return answer(last, args)
		}
		return fmt.Errorf("%s %s: %w: %s", c, strings.Join(args, " "), err, clip(text))
	}
	return answer(last, args)
}

// answer reads the helper's "ok" or "error: why"; the caller's error
// names the request.
func answer(line string, args []string) error {
	switch {
	case line == "ok":
		return nil
	case strings.HasPrefix(line, "error:"):
		return errors.New(strings.TrimSpace(strings.TrimPrefix(line, "error:")))
	}
	return fmt.Errorf("%s: the power helper answered %q, want \"ok\" or \"error: ...\"", strings.Join(args, " "), clip(line))
}
