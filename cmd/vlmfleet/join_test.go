package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nkeys"

	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/controller/client"
	"github.com/vlmfleet/vlmfleet/internal/backoff"
	"github.com/vlmfleet/vlmfleet/internal/testutil/proctest"
	"github.com/vlmfleet/vlmfleet/protocol"
)

var joinPoll = backoff.Policy{First: 50 * time.Millisecond, Max: 500 * time.Millisecond}

// startProc runs this test binary as `vlmfleet args...` (TestMain),
// logging to <dir>/<name>.log.
func startProc(t *testing.T, dir, name string, env []string, args ...string) *proctest.Proc {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(append(os.Environ(), asCLI+"=1", "VLMFLEET_LOG_FORMAT=json"), env...)
	return proctest.Start(t, name, filepath.Join(dir, name+".log"), cmd)
}

// cliProc runs `vlmfleet args...` to its end and returns its exit code,
// standard output and standard error.
func cliProc(t *testing.T, ctx context.Context, env []string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	cmd.Env = append(append(os.Environ(), asCLI+"=1"), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("%v: %v", args, err)
	}
	return cmd.ProcessState.ExitCode(), out.String(), errb.String()
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// joinLab is a controller process with TLS on, and what talks to it.
type joinLab struct {
	root, data, logs string
	ctl              *proctest.Proc
	url              string
	cliEnv           []string
	cl               *client.Client
}

func startJoinLab(t *testing.T, ctx context.Context) *joinLab {
	t.Helper()
	root := t.TempDir()
	l := &joinLab{root: root, data: filepath.Join(root, "controller"), logs: filepath.Join(root, "logs")}
	if err := os.MkdirAll(l.logs, 0o700); err != nil {
		t.Fatal(err)
	}
	httpAddr := freeAddr(t)
	l.ctl = startProc(t, l.logs, "controller", nil, "controller", "--data-dir", l.data, "--tls", "on",
		"--http", httpAddr, "--nats-listen", freeAddr(t))
	l.ctl.WaitLogged(ctx, "controller serving")
	l.url = "https://" + httpAddr
	caFile := filepath.Join(l.data, "tls", "ca.pem")
	l.cliEnv = []string{client.EnvURL + "=" + l.url, client.EnvCAFile + "=" + caFile,
		"VLMFLEET_TOKEN_FILE=" + filepath.Join(l.data, api.TokenFileName)}
	token, err := os.ReadFile(filepath.Join(l.data, api.TokenFileName))
	if err != nil {
		t.Fatal(err)
	}
	l.cl, err = client.New(l.url, client.WithCA(caFile, ""), client.WithToken(strings.TrimSpace(string(token))))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// createToken runs `vlmfleet join-token create args...` and returns the
// join string it printed.
func (l *joinLab) createToken(t *testing.T, ctx context.Context, args ...string) protocol.JoinString {
	t.Helper()
	code, out, errs := cliProc(t, ctx, l.cliEnv, append([]string{"join-token", "create", "--token-file", filepath.Join(l.data, api.TokenFileName)}, args...)...)
	if code != 0 {
		t.Fatalf("join-token create: exit %d: %s", code, errs)
	}
	js, err := protocol.ParseJoinString(strings.TrimSpace(out))
	if err != nil || js.URL != l.url {
		t.Fatalf("join-token create printed %q: %+v, %v", out, js, err)
	}
	return js
}

// agentArgs are a simulated agent's, its files under dir.
func agentArgs(id, dir string, extra ...string) []string {
	return append([]string{"agent", "--id", id, "--simulate", "Jetson AGX Orin", "--sim-models", "Cosmos3-Edge",
		"--sim-speedup", "40", "--log-dir", dir}, extra...)
}

// Devices join a controller with TLS on as real processes: a token for
// two joins enrols two simulated agents, which complete a sweep; a third
// join with it is refused, as are a revoked token, a wrong pin, a
// malformed string and a bad id, each in one line and leaving no file; an
// agent restarted without the join string signs in with what the join
// wrote; each private key exists only in its agent's directory, and no
// output shows the secret.
func TestJoinRealProcesses(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	l := startJoinLab(t, ctx)
	js := l.createToken(t, ctx, "--uses", "2", "--labels", "site=lab1")

	dirs := map[string]string{"j1": filepath.Join(l.root, "agent-j1"), "j2": filepath.Join(l.root, "agent-j2")}
	// One takes the join string as a flag, the other from the environment.
	// The second starts once the first is online: a join reloads the NATS
	// server's users, during which it may refuse a key it knows for a
	// moment, and the first agent's sign-in should not depend on that.
	agents := map[string]*proctest.Proc{}
	for id, env := range map[string][]string{"j1": nil, "j2": {envJoin + "=" + js.String()}} {
		args := agentArgs(id, dirs[id])
		if env == nil {
			args = append(args, "--join", js.String())
		}
		agents[id] = startProc(t, l.logs, "agent-"+id, env, args...)
		agents[id].WaitLogged(ctx, "joined: later starts use these credentials")
		waitOnline(t, ctx, l.cl, id, time.Time{})
	}
	views, err := l.cl.Agents(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range views {
		if v.EnrolledByToken != js.TokenID || v.Labels["site"] != "lab1" {
			t.Errorf("agent %s: enrolled by %q, labels %v", v.ID, v.EnrolledByToken, v.Labels)
		}
	}
	runSweep(t, ctx, l.cl, "j1", "j2")

	// A third join with the token is refused, and leaves nothing.
	refused := func(what, want string, env []string, args ...string) {
		t.Helper()
		code, _, errs := cliProc(t, ctx, env, args...)
		lines := strings.Split(strings.TrimSpace(errs), "\n")
		if last := lines[len(lines)-1]; code != 1 || !strings.HasPrefix(last, "vlmfleet agent: ") || !strings.Contains(last, want) {
			t.Errorf("%s: exit %d: %s\nwant a last line saying %q", what, code, errs, want)
		}
		if strings.Contains(errs, js.Secret) {
			t.Errorf("%s: the error shows the secret", what)
		}
	}
	j3 := filepath.Join(l.root, "agent-j3")
	refused("third join", "is used up (2 of 2 enrolments)", nil, agentArgs("j3", j3, "--join", js.String())...)
	other := l.createToken(t, ctx)
	if code, out, errs := cliProc(t, ctx, l.cliEnv, "join-token", "revoke", other.TokenID); code != 0 || !strings.Contains(out, "revoked join token "+other.TokenID) {
		t.Fatalf("revoke: exit %d: %s%s", code, out, errs)
	}
	refused("revoked token", "was revoked at", nil, agentArgs("j3", j3, "--join", other.String())...)
	badPin := js
	badPin.CAPin = "sha256:" + strings.Repeat("0", 64)
	refused("wrong pin", "does not match the join string's CA pin", nil, agentArgs("j3", j3, "--join", badPin.String())...)
	refused("malformed", "the join string is malformed", nil, agentArgs("j3", j3, "--join", js.String()[:40])...)
	refused("bad id", "start the agent with --id ID", nil, agentArgs("bad.id", j3, "--join", js.String())...)
	if files := filesUnder(t, j3); len(files) > 0 {
		t.Errorf("refused joins left files: %v", files)
	}

	code, out, errs := cliProc(t, ctx, l.cliEnv, "join-token", "list")
	for _, want := range []string{js.TokenID + "  used-up", "2/2", "site=lab1", other.TokenID + "  revoked"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("join-token list lacks %q: exit %d\n%s%s", want, code, out, errs)
		}
	}
	if !strings.Contains(out, "j1,j2") && !strings.Contains(out, "j2,j1") { // they joined at once
		t.Errorf("join-token list lacks the agents the token enrolled:\n%s", out)
	}
	if strings.Contains(out, js.Secret) {
		t.Error("join-token list shows the secret")
	}

	// Restarted without the join string, j1 signs in with what it wrote.
	agents["j1"].Kill()
	restarted := time.Now()
	agents["j1"] = startProc(t, l.logs, "agent-j1-again", nil, agentArgs("j1", dirs["j1"])...)
	waitOnline(t, ctx, l.cl, "j1", restarted)

	// Each private key is in its agent's directory alone, and its public
	// half is the one the controller enrolled.
	tokens, err := l.cl.JoinTokens(ctx)
	if err != nil {
		t.Fatal(err)
	}
	enrolled := map[string]string{}
	for _, tk := range tokens {
		for _, e := range tk.Enrolments {
			enrolled[e.AgentID] = e.PublicKey
		}
	}
	for id, dir := range dirs {
		seedFile := filepath.Join(dir, "spool", id+".nk")
		seed, err := os.ReadFile(seedFile)
		if err != nil {
			t.Fatalf("agent %s's credentials: %v", id, err)
		}
		if fi, _ := os.Stat(seedFile); fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, want 0600", seedFile, fi.Mode().Perm())
		}
		kp, err := nkeys.FromSeed(bytes.TrimSpace(seed))
		if err != nil {
			t.Fatal(err)
		}
		if pub, _ := kp.PublicKey(); enrolled[id] != pub {
			t.Errorf("agent %s: key %s, the controller enrolled %s", id, pub, enrolled[id])
		}
		for _, f := range filesUnder(t, l.root) {
			data, _ := os.ReadFile(f)
			if bytes.Contains(data, bytes.TrimSpace(seed)) && f != seedFile {
				t.Errorf("agent %s's private key is also in %s", id, f)
			}
			if bytes.Contains(data, []byte(js.Secret)) {
				t.Errorf("%s holds the join secret", f)
			}
		}
	}
}

// waitOnline waits until the controller has agent id online, announced
// by a start at since or later.
func waitOnline(t *testing.T, ctx context.Context, cl *client.Client, id string, since time.Time) {
	t.Helper()
	err := joinPoll.Retry(ctx, func(int) error {
		views, err := cl.Agents(ctx)
		if err != nil {
			return err
		}
		for _, v := range views {
			if v.ID == id && v.Online && !v.StartedAt.Before(since) {
				return nil
			}
		}
		return fmt.Errorf("agent %s is not online", id)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// runSweep submits a small sweep over the agents and waits until each of
// its jobs has completed.
func runSweep(t *testing.T, ctx context.Context, cl *client.Client, ids ...string) {
	t.Helper()
	w := protocol.DefaultWorkload()
	w.Sizes, w.Cameras, w.RequestsPerLevel, w.MultiImageSizes, w.ImagesPerRequest = []string{"480p"}, []int{1}, 2, nil, nil
	s, err := cl.SubmitSweep(ctx, protocol.Sweep{Name: "joined", Agents: ids, Workload: w})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range s.Jobs {
		err := joinPoll.Retry(ctx, func(int) error {
			j, err := cl.Job(ctx, id)
			switch {
			case err != nil:
				return err
			case j.State == protocol.JobCompleted:
				return nil
			case j.State.Terminal():
				return backoff.Permanent(fmt.Errorf("job %s ended %s: %s", id, j.State, j.Error))
			}
			return fmt.Errorf("job %s is %s", id, j.State)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// filesUnder lists the regular files under dir.
func filesUnder(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err == nil && d.Type().IsRegular() {
			out = append(out, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
