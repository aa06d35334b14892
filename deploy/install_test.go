// Package deploy holds no code: its tests check the files people install
// with, deploy/install.sh and its units, and scripts/release.
package deploy

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// fakeBinary is what install.sh copies as /usr/local/bin/vlmfleet: any
// executable file does, and systemd-analyze only checks that it is one.
func fakeBinary(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "vlmfleet")
	if err := os.WriteFile(p, []byte("#!/bin/sh\necho vlmfleet\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// install runs install.sh and returns its output and exit status.
func install(t *testing.T, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command("bash", append([]string{"install.sh"}, args...)...)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return string(out), 0
	case errors.As(err, &exit):
		return string(out), exit.ExitCode()
	default:
		t.Fatalf("install.sh %v: %v", args, err)
		return "", 0
	}
}

func mustInstall(t *testing.T, args ...string) string {
	t.Helper()
	out, code := install(t, args...)
	if code != 0 {
		t.Fatalf("install.sh %v: exit %d\n%s", args, code, out)
	}
	return out
}

func wantLines(t *testing.T, out string, lines ...string) {
	t.Helper()
	have := map[string]bool{}
	for _, l := range strings.Split(out, "\n") {
		have[l] = true
	}
	for _, l := range lines {
		if !have[l] {
			t.Errorf("no line %q in the output:\n%s", l, out)
		}
	}
}

// A dry run prints every action, the system's included, and changes nothing.
func TestInstallDryRunPrintsEveryActionAndDoesNone(t *testing.T) {
	bin := fakeBinary(t)
	here, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for _, role := range []string{"agent", "controller"} {
		t.Run(role, func(t *testing.T) {
			prefix := t.TempDir()
			out := mustInstall(t, role, "--binary", bin, "--dry-run", "--prefix", prefix)
			config := map[string]string{"agent": "agent.yaml", "controller": "controller.env"}[role]
			skeleton := map[string]string{"agent": "agent.example.yaml", "controller": "controller.env"}[role]
			unit := "vlmfleet-" + role + ".service"
			wantLines(t, out,
				"+ useradd --system --user-group --home-dir /var/lib/vlmfleet --no-create-home --shell /usr/sbin/nologin --comment vlmfleet\\ "+role+" vlmfleet # not run: --prefix",
				"+ mkdir -p "+prefix+"/etc/vlmfleet "+prefix+"/var/lib/vlmfleet "+prefix+"/var/log/vlmfleet "+prefix+"/var/cache/vlmfleet "+prefix+"/usr/local/bin "+prefix+"/etc/systemd/system",
				"+ chmod 0750 "+prefix+"/etc/vlmfleet "+prefix+"/var/lib/vlmfleet "+prefix+"/var/log/vlmfleet "+prefix+"/var/cache/vlmfleet",
				"+ chown root:vlmfleet /etc/vlmfleet # not run: --prefix",
				"+ chown vlmfleet:vlmfleet /var/lib/vlmfleet /var/log/vlmfleet /var/cache/vlmfleet # not run: --prefix",
				"+ install -m 0755 "+bin+" "+prefix+"/usr/local/bin/vlmfleet",
				"+ install -m 0640 "+filepath.Join(here, skeleton)+" "+prefix+"/etc/vlmfleet/"+config,
				"+ install -m 0644 "+filepath.Join(here, unit)+" "+prefix+"/etc/systemd/system/"+unit,
				"+ systemctl daemon-reload # not run: --prefix",
				"+ systemctl enable "+unit+" # not run: --prefix",
				"# edit /etc/vlmfleet/"+config+", then: systemctl start "+unit,
			)
			if role == "agent" {
				wantLines(t, out, "+ usermod --append --groups video vlmfleet # not run: --prefix")
			} else if strings.Contains(out, "usermod") {
				t.Errorf("the controller joins no device group:\n%s", out)
			}
			entries, err := os.ReadDir(prefix)
			if err != nil {
				t.Fatal(err)
			}
			if len(entries) != 0 {
				t.Errorf("a dry run created %v under the prefix", entries)
			}
		})
	}

	// Without a prefix the system steps are the real ones, shown as such.
	out := mustInstall(t, "agent", "--binary", bin, "--dry-run")
	if strings.Contains(out, "not run") {
		t.Errorf("a dry run on / marks steps as not run:\n%s", out)
	}
	wantLines(t, out,
		"+ install -m 0755 "+bin+" /usr/local/bin/vlmfleet",
		"+ chown root:vlmfleet /etc/vlmfleet",
		"+ systemctl enable vlmfleet-agent.service",
	)
}

// An install into a prefix writes what the dry run announced, with the
// modes it announced; a second install keeps the operator's configuration,
// replaces the unit and restarts the service.
func TestInstallWritesFilesAndKeepsAnExistingConfig(t *testing.T) {
	bin := fakeBinary(t)
	prefix := t.TempDir()
	// A Jetson: the agent's user joins video, whose device nodes the
	// engines and tegrastats need; nothing else is granted.
	if err := os.MkdirAll(filepath.Join(prefix, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(prefix, "etc", "nv_tegra_release"), []byte("# R36 (release), REVISION: 4.3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := mustInstall(t, "agent", "--binary", bin, "--prefix", prefix)
	wantLines(t, out, "# Jetson (/etc/nv_tegra_release): tegrastats and nvpmodel -q run as vlmfleet, with group video; nothing else granted")
	if strings.Contains(out, "sudo") {
		t.Errorf("the install grants sudo:\n%s", out)
	}

	modes := map[string]os.FileMode{
		"etc/vlmfleet":                              os.ModeDir | 0o750,
		"var/lib/vlmfleet":                          os.ModeDir | 0o750,
		"var/log/vlmfleet":                          os.ModeDir | 0o750,
		"var/cache/vlmfleet":                        os.ModeDir | 0o750,
		"usr/local/bin/vlmfleet":                    0o755,
		"etc/vlmfleet/agent.yaml":                   0o640,
		"etc/systemd/system/vlmfleet-agent.service": 0o644,
	}
	wantModes(t, prefix, modes)
	sameFile(t, "agent.example.yaml", filepath.Join(prefix, "etc/vlmfleet/agent.yaml"))
	sameFile(t, "vlmfleet-agent.service", filepath.Join(prefix, "etc/systemd/system/vlmfleet-agent.service"))
	sameFile(t, bin, filepath.Join(prefix, "usr/local/bin/vlmfleet"))
	verifyUnits(t, prefix, "vlmfleet-agent.service")

	// The operator's configuration survives a second install; the unit is
	// the package's and is put back.
	config := filepath.Join(prefix, "etc/vlmfleet/agent.yaml")
	mine := []byte("id: my-orin\n")
	if err := os.WriteFile(config, mine, 0o640); err != nil {
		t.Fatal(err)
	}
	unit := filepath.Join(prefix, "etc/systemd/system/vlmfleet-agent.service")
	if err := os.WriteFile(unit, []byte("[Service]\nExecStart=/bin/false\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out = mustInstall(t, "agent", "--binary", bin, "--prefix", prefix)
	wantLines(t, out,
		"# keeping /etc/vlmfleet/agent.yaml (exists)",
		"+ systemctl restart vlmfleet-agent.service # not run: --prefix",
	)
	if got, err := os.ReadFile(config); err != nil || string(got) != string(mine) {
		t.Errorf("the second install changed the configuration: %q, %v", got, err)
	}
	sameFile(t, "vlmfleet-agent.service", unit)

	// Reinstalling the binary already in place (--binary
	// /usr/local/bin/vlmfleet) is not an error.
	out = mustInstall(t, "agent", "--binary", filepath.Join(prefix, "usr/local/bin/vlmfleet"), "--prefix", prefix)
	wantLines(t, out, "# "+prefix+"/usr/local/bin/vlmfleet is the binary given: left as it is")

	// The controller beside it, in the same tree.
	out = mustInstall(t, "controller", "--binary", bin, "--prefix", prefix)
	if strings.Contains(out, "Jetson") || strings.Contains(out, "usermod") {
		t.Errorf("the controller got the agent's device access:\n%s", out)
	}
	sameFile(t, "controller.env", filepath.Join(prefix, "etc/vlmfleet/controller.env"))
	verifyUnits(t, prefix, "vlmfleet-controller.service")
}

func TestInstallRefusesBadArguments(t *testing.T) {
	bin := fakeBinary(t)
	missing := filepath.Join(t.TempDir(), "missing")
	cases := []struct {
		args []string
		code int
		want string
	}{
		{nil, 2, "usage: deploy/install.sh agent|controller"},
		{[]string{"nats"}, 2, `role "nats": must be agent or controller`},
		{[]string{"agent", "--binary", missing, "--dry-run"}, 1, "--binary " + missing + ": no executable file there"},
		{[]string{"agent", "--binary", bin, "--prefix", "relative/dir", "--dry-run"}, 2, "--prefix relative/dir: must be an absolute path"},
		{[]string{"agent", "--binary", bin, "--force"}, 2, "unknown argument --force"},
		{[]string{"agent", "--binary"}, 2, "--binary needs a PATH"},
	}
	for _, tc := range cases {
		out, code := install(t, tc.args...)
		if code != tc.code || !strings.Contains(out, tc.want) {
			t.Errorf("install.sh %v: exit %d, output %q; want exit %d and %q", tc.args, code, out, tc.code, tc.want)
		}
	}
}

// The units must load: systemd-analyze verify reports unknown keys, bad
// values and a missing executable (looked up under the prefix).
func verifyUnits(t *testing.T, prefix string, units ...string) {
	t.Helper()
	sa, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Log("systemd-analyze verify skipped: systemd-analyze is not installed here")
		return
	}
	for _, u := range units {
		cmd := exec.Command(sa, "verify", "--root="+prefix, "--recursive-errors=no", filepath.Join(prefix, "etc/systemd/system", u))
		cmd.Dir = prefix
		out, err := cmd.CombinedOutput()
		if err != nil || len(out) != 0 {
			t.Errorf("systemd-analyze verify %s: %v\n%s", u, err, out)
		}
	}
}

// Every shell script of the repository, the power helper that runs as root
// on the devices first. scripts/test installs shellcheck, so this skips
// only where the tests run without it.
func TestScriptsAreShellcheckClean(t *testing.T) {
	sc, err := exec.LookPath("shellcheck")
	if err != nil {
		t.Skip("shellcheck is not installed here (Debian package shellcheck)")
	}
	scripts, err := filepath.Glob("../scripts/*")
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{"install.sh", "vlmfleet-power", "../.ci/run"}, scripts...)
	out, err := exec.Command(sc, args...).CombinedOutput()
	if err != nil {
		t.Errorf("shellcheck: %v\n%s", err, out)
	}
}

func sameFile(t *testing.T, want, got string) {
	t.Helper()
	a, err := os.ReadFile(want)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(got)
	if err != nil {
		t.Errorf("not installed: %v", err)
		return
	}
	if string(a) != string(b) {
		t.Errorf("%s differs from %s", got, want)
	}
}

// --power-switch installs the root helper and its socket units, and says
// what to set in the agent's configuration; it is refused for the controller.
func TestInstallPowerSwitch(t *testing.T) {
	bin := fakeBinary(t)
	prefix := t.TempDir()
	out := mustInstall(t, "agent", "--binary", bin, "--prefix", prefix, "--power-switch")
	wantLines(t, out,
		"+ chown root:root /usr/local/libexec/vlmfleet-power # not run: --prefix",
		"+ systemctl enable --now vlmfleet-power.socket # not run: --prefix",
		"# set power: {switch: true} in /etc/vlmfleet/agent.yaml to let jobs switch the power",
	)
	wantModes(t, prefix, map[string]os.FileMode{
		"usr/local/libexec/vlmfleet-power":           0o755,
		"etc/systemd/system/vlmfleet-power.socket":   0o644,
		"etc/systemd/system/vlmfleet-power@.service": 0o644,
		"etc/systemd/system/vlmfleet-agent.service":  0o644,
	})
	sameFile(t, "vlmfleet-power", filepath.Join(prefix, "usr/local/libexec/vlmfleet-power"))
	sameFile(t, "vlmfleet-power.socket", filepath.Join(prefix, "etc/systemd/system/vlmfleet-power.socket"))
	sameFile(t, "vlmfleet-power@.service", filepath.Join(prefix, "etc/systemd/system/vlmfleet-power@.service"))
	verifyUnits(t, prefix, "vlmfleet-power.socket")

	// Without the flag nothing of it is installed.
	plain := t.TempDir()
	if out := mustInstall(t, "agent", "--binary", bin, "--prefix", plain); strings.Contains(out, "vlmfleet-power") {
		t.Errorf("an install without --power-switch installs the helper:\n%s", out)
	}
	if out, code := install(t, "controller", "--binary", bin, "--dry-run", "--power-switch"); code != 2 || !strings.Contains(out, "--power-switch is for the agent") {
		t.Errorf("controller --power-switch: exit %d: %s", code, out)
	}
}

// installIn runs install.sh with stdin and env added to its environment,
// and returns its output and exit status.
func installIn(t *testing.T, stdin string, env []string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command("bash", append([]string{"install.sh"}, args...)...)
	cmd.Stdin, cmd.Env = strings.NewReader(stdin), append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("install.sh %v: %v", args, err)
	}
	return string(out), cmd.ProcessState.ExitCode()
}

// testSecret is the secret of testJoin, looked for where it must not be.
const testSecret = "s3cr3tS3CR3Ts3cr3tS3CR3Ts3cr3tS3CR3Ts3cr3t"

var testJoin = "vlmfleet-join:1:0123456789ab:" + testSecret + ":sha256:" + strings.Repeat("0", 64) + ":https://ctl.lab:8080"

// install.sh agent --join enrols the device as the agent's user, the join
// string read from standard input or $VLMFLEET_JOIN and handed on in the
// environment: it is never printed. A skeleton installed with it has its
// example id and NATS settings commented out, which the join replaces.
func TestInstallAgentJoin(t *testing.T) {
	bin := fakeBinary(t)
	const shown = "+ runuser -u vlmfleet -- /usr/local/bin/vlmfleet agent --config /etc/vlmfleet/agent.yaml --join-only # the join string in $VLMFLEET_JOIN"
	for name, tc := range map[string]struct {
		stdin string
		env   []string
		args  []string
	}{
		"--join - reads stdin":        {" " + testJoin + "\r\n", []string{"VLMFLEET_JOIN=vlmfleet-join:other"}, []string{"--join", "-"}},
		"--join reads stdin":          {testJoin, nil, []string{"--join", "--power-switch"}},
		"--join reads $VLMFLEET_JOIN": {"", []string{"VLMFLEET_JOIN=" + testJoin}, []string{"--join"}},
	} {
		out, code := installIn(t, tc.stdin, tc.env, append([]string{"agent", "--binary", bin, "--dry-run"}, tc.args...)...)
		if code != 0 || strings.Contains(out, testSecret) {
			t.Errorf("%s: exit %d, want 0 and no secret in the output:\n%s", name, code, out)
		}
		wantLines(t, out, shown)
	}
	prefix := t.TempDir()
	out, code := installIn(t, testJoin+"\n", nil, "agent", "--binary", bin, "--prefix", prefix, "--join", "-")
	if code != 0 || strings.Contains(out, testSecret) {
		t.Errorf("install with --join: exit %d, want 0 and no secret in the output:\n%s", code, out)
	}
	wantLines(t, out, shown+"; not run: --prefix")
	cfg, err := os.ReadFile(filepath.Join(prefix, "etc/vlmfleet/agent.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []string{"# id: agx-orin-01\n", "# nats_url: tls://controller.lab:4222\n", "# nats_credentials: /etc/vlmfleet/agx-orin-01.nk\n"} {
		if !strings.Contains(string(cfg), l) {
			t.Errorf("the installed configuration lacks %q:\n%s", l, cfg)
		}
	}
}

// A join string given as an argument is refused, before anything is done,
// with how to give it instead, and is not repeated; so are a join string
// that is missing or malformed and a join for the controller.
func TestInstallAgentJoinRefusals(t *testing.T) {
	bin := fakeBinary(t)
	for _, tc := range []struct {
		stdin string
		args  []string
		want  string
	}{
		{"", []string{"agent", "--binary", bin, "--join", testJoin}, "install.sh: --join takes no join string as an argument: every local user sees the arguments (ps), and sudo logs them"},
		{"", []string{"agent", "--join", testJoin, "--binary", bin}, "sudo deploy/install.sh agent --join < FILE"},
		{"", []string{"agent", "--binary", bin, "--dry-run", "--join", "hello"}, "install.sh: --join takes no join string as an argument"},
		{"", []string{"agent", "--binary", bin, "--dry-run", "--join"}, "install.sh: --join: no join string in $VLMFLEET_JOIN or on standard input"},
		{"hello\n", []string{"agent", "--binary", bin, "--dry-run", "--join", "-"}, "install.sh: --join: not a join string (vlmfleet-join:...)"},
		{testJoin, []string{"controller", "--binary", bin, "--dry-run", "--join"}, "install.sh: --join is for an agent"},
	} {
		prefix := t.TempDir()
		out, code := installIn(t, tc.stdin, nil, append(tc.args, "--prefix", prefix)...)
		if code != 2 || !strings.Contains(out, tc.want) || strings.Contains(out, testSecret) {
			t.Errorf("%q: exit %d\n%s\nwant exit 2 saying %q, without the secret", tc.args, code, out, tc.want)
		}
		if entries, _ := os.ReadDir(prefix); len(entries) != 0 {
			t.Errorf("%q: refused, but installed %v", tc.args, entries)
		}
	}
}

// wantModes checks that each file is installed under prefix with its mode.
func wantModes(t *testing.T, prefix string, modes map[string]os.FileMode) {
	t.Helper()
	for p, want := range modes {
		fi, err := os.Stat(filepath.Join(prefix, p))
		if err != nil {
			t.Errorf("not installed: %v", err)
			continue
		}
		if fi.Mode() != want {
			t.Errorf("%s: mode %v, want %v", p, fi.Mode(), want)
		}
	}
}
