package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// powerRig is the helper script's world: a fixture nvpmodel.conf, and a
// fake nvpmodel and nvidia-smi (shell scripts) that log their arguments.
func powerRig(t *testing.T) (env []string, log string) {
	t.Helper()
	dir := t.TempDir()
	log = filepath.Join(dir, "calls.log")
	conf := filepath.Join(dir, "nvpmodel.conf")
	files := map[string]string{
		conf: "# modes\n< PARAM TYPE=CLOCK NAME=GPU >\nMAX_FREQ /sys/x/max_freq\n" +
			"< POWER_MODEL ID=0 NAME=MAXN >\nGPU MAX_FREQ -1\n<POWER_MODEL ID=1 NAME=15W> # tight\n" +
			"< POWER_MODEL ID=2 NAME=MAXN_SUPER >\n# < POWER_MODEL ID=9 NAME=GHOST >\n< PM_CONFIG DEFAULT=1 >\n",
		filepath.Join(dir, "nvpmodel"):   "#!/bin/sh\necho \"nvpmodel $*\" >> " + log + "\n",
		filepath.Join(dir, "nvidia-smi"): "#!/bin/sh\ncase $1 in --query-gpu=*) echo '0, 150.00, 600.00'; echo '1, 200.00, 450.00' ;; *) echo \"nvidia-smi $*\" >> " + log + " ;; esac\n",
	}
	for p, body := range files {
		if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return append(os.Environ(), "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"), "VLMFLEET_NVPMODEL_CONF="+conf), log
}

// The helper does what a request names, only among the modes the conf
// lists and the limits nvidia-smi allows, and refuses anything else with
// one "error:" line; from stdin (the socket) a refusal is not a failure.
func TestPowerHelperScript(t *testing.T) {
	env, log := powerRig(t)
	run := func(stdin string, args ...string) (string, int) {
		cmd := exec.Command("/bin/sh", append([]string{"vlmfleet-power"}, args...)...)
		cmd.Env, cmd.Stdin = env, strings.NewReader(stdin)
		out, err := cmd.Output()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(out)), code
	}
	for _, tc := range []struct {
		stdin string
		args  []string
		want  string
		code  int
	}{
		{"", []string{"mode", "15W"}, "ok", 0},
		{"mode MAXN_SUPER\n", nil, "ok", 0},
		{"", []string{"limit", "500"}, "error: power limit 500 W: GPU 1 allows 200.00-450.00 W", 1},
		{"", []string{"limit", "500", "0"}, "ok", 0},
		{"", []string{"limit", "100", "0"}, "error: power limit 100 W: GPU 0 allows 150.00-600.00 W", 1},
		{"", []string{"limit", "250"}, "ok", 0},
		{"", []string{"mode", "GHOST"}, "error: " + "CONF lists no POWER_MODEL NAME=GHOST", 1},
		{"", []string{"mode", "15W;reboot"}, `error: mode name "15W;reboot": letters, digits, _ - . + only`, 1},
		{"", []string{"mode", "$(reboot)"}, `error: mode name "$(reboot)": letters, digits, _ - . + only`, 1},
		{"", []string{"mode"}, `error: want "mode NAME"`, 1},
		{"", []string{"limit", "3e2"}, `error: power limit "3e2": want watts`, 1},
		{"", []string{"limit", "300", "-1"}, `error: GPU "-1": want an index`, 1},
		{"", []string{"reboot"}, `error: want "mode NAME" or "limit W [GPU]"`, 1},
		{"mode 15W; reboot\n", nil, `error: want "mode NAME"`, 0},
		{"mode *\n", nil, `error: mode name "*"`, 0},
		{strings.Repeat("x", 300) + "\n", nil, `error: want "mode NAME" or "limit W [GPU]"`, 0},
	} {
		got, code := run(tc.stdin, tc.args...)
		want := strings.ReplaceAll(tc.want, "CONF", env[len(env)-1][len("VLMFLEET_NVPMODEL_CONF="):])
		if code != tc.code || !strings.HasPrefix(got, want) {
			t.Errorf("%q %q: %q (exit %d), want %q (exit %d)", tc.args, tc.stdin, got, code, want, tc.code)
		}
	}
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	want := "nvpmodel -m 1\nnvpmodel -m 2\nnvidia-smi -i 0 -pl 500\nnvidia-smi -pl 250\n"
	if string(b) != want {
		t.Errorf("calls:\n%s\nwant:\n%s", b, want)
	}
}

// The helper repeats a request as it came, in its answer and in the
// journal line: a request with backslash escapes, which dash's echo would
// turn into a new line (and \c into the end of the output), yields one
// line each, so a socket user cannot forge a journal entry.
func TestPowerHelperRepeatsRequestsVerbatim(t *testing.T) {
	env, _ := powerRig(t)
	const req = `mode a\nvlmfleet-power:\0040forged\0040line\c`
	// dash, Debian's /bin/sh, is the shell whose echo reads the escapes.
	sh, err := exec.LookPath("dash")
	if err != nil {
		t.Logf("dash is not installed here: the helper runs under /bin/sh")
		sh = "/bin/sh"
	}
	cmd := exec.Command(sh, "vlmfleet-power")
	var stdout, stderr strings.Builder
	cmd.Env, cmd.Stdin, cmd.Stdout, cmd.Stderr = env, strings.NewReader(req+"\n"), &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("vlmfleet-power: %v\n%s", err, stderr.String())
	}
	answer := `error: mode name "a\nvlmfleet-power:\0040forged\0040line\c": letters, digits, _ - . + only`
	if stdout.String() != answer+"\n" {
		t.Errorf("answer %q, want the one line %q", stdout.String(), answer+"\n")
	}
	if want := "vlmfleet-power: " + req + ": " + answer + "\n"; stderr.String() != want {
		t.Errorf("journal %q, want the one line %q", stderr.String(), want)
	}
}
