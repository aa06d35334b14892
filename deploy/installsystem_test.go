package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// systemInstall is the shell that runs install.sh as on a device, with no
// prefix, in a mount namespace of its own where /etc, /var and /usr/local
// are overlays on a temporary directory: what it writes, the user it adds
// included, is gone when it ends. Only systemctl is a stand-in (no systemd
// runs here). Every program it starts is traced (strace), to $TRACE.
const systemInstall = `set -eu
for d in etc var usr/local; do
  mkdir -p "$OVERLAYS/$d/upper" "$OVERLAYS/$d/work"
  mount -t overlay overlay -o "lowerdir=/$d,upperdir=$OVERLAYS/$d/upper,workdir=$OVERLAYS/$d/work" "/$d"
done
strace -f -qq -e trace=execve -s 65536 -o "$TRACE" bash install.sh agent --binary "$BINARY" --join - <"$JOIN_FILE"
cp /var/lib/vlmfleet/join-seen "$SEEN"
`

// joinRecorder stands in for the vlmfleet binary: run for the join, it
// writes down who ran it, with which arguments, and the join string it
// found where the agent reads it ($VLMFLEET_JOIN).
const joinRecorder = `#!/bin/sh
printf 'user=%s\nargs=%s\njoin=%s\n' "$(id -un)" "$*" "${VLMFLEET_JOIN:-}" >/var/lib/vlmfleet/join-seen
`

// systemInstallTools skips the test unless this machine can run
// systemInstall: as root, with unshare, overlayfs, strace (allowed to
// trace), useradd and runuser.
func systemInstallTools(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root, to install as on a device inside a mount namespace; CI runs as root")
	}
	for _, tool := range []string{"unshare", "strace", "useradd", "runuser"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s: %v", tool, err)
		}
	}
	dir := t.TempDir()
	probe := exec.Command("unshare", "--mount", "--propagation", "private", "sh", "-c",
		`mkdir "$1/u" "$1/w" && mount -t overlay overlay -o "lowerdir=/etc,upperdir=$1/u,workdir=$1/w" /etc && strace -qq -o /dev/null true`, "sh", dir)
	if out, err := probe.CombinedOutput(); err != nil {
		t.Skipf("cannot mount an overlay in a mount namespace, or trace a program, here: %v: %s", err, out)
	}
}

// An install as on a device, with the join string on standard input, hands
// it to the join, run as the agent's user, in $VLMFLEET_JOIN; no program the
// install runs has it among its arguments, and it prints it nowhere.
func TestInstallAgentJoinHandsTheStringOnInTheEnvironment(t *testing.T) {
	systemInstallTools(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "vlmfleet")
	joinFile := filepath.Join(dir, "join.txt")
	for p, body := range map[string]string{bin: joinRecorder, joinFile: testJoin + "\n"} {
		if err := os.WriteFile(p, []byte(body), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	stubs := filepath.Join(dir, "bin")
	if err := os.Mkdir(stubs, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(stubs, "systemctl"), []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	trace, seen := filepath.Join(dir, "trace"), filepath.Join(dir, "seen")
	cmd := exec.Command("unshare", "--mount", "--propagation", "private", "sh", "-c", systemInstall)
	cmd.Env = append(os.Environ(), "PATH="+stubs+string(os.PathListSeparator)+os.Getenv("PATH"),
		"OVERLAYS="+filepath.Join(dir, "overlays"), "TRACE="+trace, "BINARY="+bin, "JOIN_FILE="+joinFile, "SEEN="+seen)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("install.sh agent --join -: %v\n%s", err, out)
	}
	if strings.Contains(string(out), testSecret) {
		t.Errorf("install.sh printed the join string:\n%s", out)
	}

	got, err := os.ReadFile(seen)
	if err != nil {
		t.Fatal(err)
	}
	want := "user=vlmfleet\nargs=agent --config /etc/vlmfleet/agent.yaml --join-only\njoin=" + testJoin + "\n"
	if string(got) != want {
		t.Errorf("the join found:\n%s\nwant:\n%s", got, want)
	}

	execs, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(execs), `"runuser", "-u", "vlmfleet", "--", "/usr/local/bin/vlmfleet", "agent"`) {
		t.Fatalf("the trace lacks the join's runuser:\n%s", execs)
	}
	for _, l := range strings.Split(string(execs), "\n") {
		if strings.Contains(l, testSecret) {
			t.Errorf("a program the install ran had the join string among its arguments:\n%s", l)
		}
	}
}
