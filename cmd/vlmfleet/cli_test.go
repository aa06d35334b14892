package main

import (
	"encoding/csv"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/vlmfleet/vlmfleet/controller"
	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/harness/labtest"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// TestCLIExitCodesAndMessages: how each command answers a mistake and a
// request for help. A usage error exits 2 and names the flag and what is
// allowed; help exits 0 with a purpose, the flags and an example.
func TestCLIExitCodesAndMessages(t *testing.T) {
	for _, c := range []struct {
		args       []string
		code       int
		stdout     []string
		stderr     []string
		notStderr  string
		emptyOuput bool
	}{
		{args: nil, code: 2, stderr: []string{"Usage: vlmfleet COMMAND", "Commands:"}, emptyOuput: true},
		{args: []string{"--version"}, code: 0, stdout: []string{"vlmfleet ", "commit ", "built "}},
		{args: []string{"version"}, code: 0, stdout: []string{"vlmfleet "}},
		{args: []string{"version", "x"}, code: 2, stderr: []string{`unexpected argument "x"`}},
		{args: []string{"nope"}, code: 2, stderr: []string{`unknown command "nope"`}},
		{args: []string{"explorer", "table", "--images", "2"}, code: 2, stderr: []string{"--images 2: want 1, 3 or 5", "Run 'vlmfleet explorer table -h'"}},
		{args: []string{"explorer", "table", "--size", "4k"}, code: 2, stderr: []string{`--size: "4k" is not one of 480p, 720p, 1080p, 2K`}},
		{args: []string{"explorer", "table", "--sort", "speed"}, code: 2, stderr: []string{`--sort "speed": want max`, "tps", "params"}},
		{args: []string{"explorer", "table", "--every", "-5"}, code: 2, stderr: []string{"--every: -5, want 0 (back to back)"}},
		{args: []string{"explorer", "table", "--statistic", "p99"}, code: 2, stderr: []string{`--statistic: "p99", want mean, p90 or p95`}},
		{args: []string{"explorer", "table", "--bogus"}, code: 2, stderr: []string{"flag provided but not defined: -bogus", "Run 'vlmfleet explorer table -h'"}},
		{args: []string{"explorer"}, code: 2, stderr: []string{"want a subcommand: table, export or profiles"}},
		{args: []string{"device", "--simulate", "Jetson Nano"}, code: 2, stderr: []string{`--simulate "Jetson Nano": not a simulated device; known:`, `"Jetson AGX Orin"`, `"RTX PRO 6000 Max-Q"`}},
		{args: []string{"sweep", "--requests", "0"}, code: 2, stderr: []string{"--requests 0: want 1 or more"}, notStderr: "workload."},
		{args: []string{"sweep", "watch"}, code: 2, stderr: []string{"want one sweep id, got 0 arguments"}},
		{args: []string{"sweep", "cancel", "a", "b"}, code: 2, stderr: []string{"want one sweep or job id, got 2 arguments"}},
		{args: []string{"results", "export"}, code: 2, stderr: []string{"--format is required: csv or json"}},
		{args: []string{"results", "export", "--format", "xml"}, code: 2, stderr: []string{`--format "xml": want csv or json`}},
		{args: []string{"agents", "x"}, code: 2, stderr: []string{`unexpected argument "x"`}},
		{args: []string{"join-token", "create", "--labels", "site"}, code: 2, stderr: []string{`--labels: item 1, "site", is not key=value`}},
		{args: []string{"join-token", "create", "--ttl", "10s"}, code: 2, stderr: []string{"--ttl 10s: want 1m to 720h0m0s"}},
		{args: []string{"join-token", "revoke"}, code: 2, stderr: []string{"want one join token id"}},
		{args: []string{"join-token", "-h"}, code: 0, stdout: []string{"vlmfleet join-token create", "vlmfleet join-token list", "vlmfleet join-token revoke"}},
		{args: []string{"agent", "--simulate", "Jetson AGX Orin", "--join-only"}, code: 2, stderr: []string{"--join-only needs --join STRING"}},
		{args: []string{"sweep", "-h"}, code: 0, stdout: []string{"submit a sweep", "Usage:", "-deployments", "Example:\n  vlmfleet sweep "}},
		{args: []string{"explorer", "--help"}, code: 0, stdout: []string{"vlmfleet explorer table", "vlmfleet explorer export"}},
		{args: []string{"results", "-h"}, code: 0, stdout: []string{"vlmfleet results import", "vlmfleet results export"}},
	} {
		code, out, errOut := cliRun(t, nil, c.args...)
		bad := code != c.code || (c.emptyOuput && out != "") || (c.notStderr != "" && strings.Contains(errOut, c.notStderr))
		for _, w := range c.stdout {
			bad = bad || !strings.Contains(out, w)
		}
		for _, w := range c.stderr {
			bad = bad || !strings.Contains(errOut, w)
		}
		if bad {
			t.Errorf("vlmfleet %q: exit %d\nstdout:\n%s\nstderr:\n%s\nwant exit %d, stdout with %q, stderr with %q", c.args, code, out, errOut, c.code, c.stdout, c.stderr)
		}
	}
}

// TestEveryCommandHasHelp: -h of every command and subcommand prints a
// purpose, its flags and an example, and exits 0.
func TestEveryCommandHasHelp(t *testing.T) {
	for name := range helps {
		args := append(strings.Fields(name), "-h")
		code, out, errOut := cliRun(t, nil, args...)
		if code != 0 || !strings.HasPrefix(out, helps[name].purpose+"\n") || !strings.Contains(out, "\nExample:\n  vlmfleet ") {
			t.Errorf("vlmfleet %s -h: exit %d\nstdout:\n%s\nstderr:\n%s", name, code, out, errOut)
		}
		if name != "version" && !strings.Contains(out, "\nFlags:\n") {
			t.Errorf("vlmfleet %s -h lists no flags:\n%s", name, out)
		}
	}
	for name := range commands() {
		if _, ok := helps[name]; !ok && !slices.Contains([]string{"explorer", "results", "agent-creds", "join-token"}, name) {
			t.Errorf("command %s has no help text", name)
		}
	}
}

func TestNaturalOrder(t *testing.T) {
	ids := []string{"sw-1-j10", "sw-1-j2", "sw-1-j1", "sw-1-j02", "sw-1-j1a"}
	slices.SortStableFunc(ids, naturalLess)
	if want := []string{"sw-1-j1", "sw-1-j1a", "sw-1-j2", "sw-1-j02", "sw-1-j10"}; !slices.Equal(ids, want) {
		t.Errorf("got %q, want %q", ids, want)
	}
}

func TestLogFormat(t *testing.T) {
	for _, c := range []struct {
		cmd  string
		tty  bool
		env  string
		want string
	}{
		{"bench", false, "", logText}, {"demo", false, "", logText}, {"controller", false, "", logJSON},
		{"agent", true, "", logText}, {"bench", false, "json", logJSON}, {"controller", false, "text", logText},
	} {
		if got := logFormat(c.cmd, c.tty, c.env); got != c.want {
			t.Errorf("%s tty=%v env=%q: %s, want %s", c.cmd, c.tty, c.env, got, c.want)
		}
	}
}

func TestExplorerTableFiltersAndSorts(t *testing.T) {
	code, out, errOut := cliRun(t, nil, "explorer", "table", "--file", seedRuns, "--device", "agx orin", "--model", "QWEN3", "--sort", "tps")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := tableLines(out)
	rows := lines[1 : len(lines)-1]
	if len(rows) < 2 {
		t.Fatalf("want several Qwen3 rows on the AGX Orin:\n%s", out)
	}
	var last float64 = 1e9
	for _, l := range rows {
		if !strings.Contains(l, "Jetson AGX Orin") || !strings.HasPrefix(strings.ToLower(l), "qwen3") {
			t.Errorf("row %q escapes the filters", l)
		}
		f := strings.Fields(l)
		var tps float64
		if err := json.Unmarshal([]byte(f[len(f)-3]), &tps); err != nil {
			t.Fatalf("row %q: TPS %q", l, f[len(f)-3])
		}
		if tps > last {
			t.Errorf("--sort tps: %g after %g", tps, last)
		}
		last = tps
		// Seconds always with two decimals, TPS with one: the column lines up.
		if ttft := f[len(f)-5]; len(ttft) < 4 || ttft[len(ttft)-3] != '.' {
			t.Errorf("row %q: TTFT %q, want two decimals", l, ttft)
		}
	}
	code, out, _ = cliRun(t, nil, "explorer", "table", "--file", seedRuns, "--sort", "params")
	rows = tableLines(out)
	if code != 0 || !strings.Contains(rows[1], "2.") {
		t.Errorf("--sort params: first row %q, want the smallest model", rows[1])
	}
}

// TestSweepListAgentsAndExport: the CLI reads a controller's sweeps, agents
// and runs back.
func TestSweepListAgentsAndExport(t *testing.T) {
	l := labtest.Start(t, controller.Options{})
	env := map[string]string{"VLMFLEET_CONTROLLER": l.Ctl.HTTPURL(), "VLMFLEET_TOKEN": l.Ctl.APIToken()}
	code, out, errOut := cliRun(t, env, "agents")
	if code != 0 || !strings.Contains(out, labtest.Agent) || !strings.Contains(out, "d1") {
		t.Fatalf("agents: exit %d\n%s\n%s", code, out, errOut)
	}
	code, _, errOut = cliRun(t, env, "sweep", "--sizes", "720p", "--cameras", "1", "--multi-sizes", "none", "--deployments", "nope")
	if code != 1 || !strings.Contains(errOut, `"nope"`) || !strings.Contains(errOut, "d1") {
		t.Errorf("unknown deployment: exit %d, stderr %q; want the ids the agents offer (d1)", code, errOut)
	}
	code, _, errOut = cliRun(t, env, "sweep", "--name", "first", "--sizes", "720p", "--cameras", "1", "--multi-sizes", "none")
	if code != 0 {
		t.Fatalf("sweep: exit %d: %s", code, errOut)
	}
	code, out, errOut = cliRun(t, env, "sweep", "list")
	if code != 0 || !strings.Contains(out, "first") || !strings.Contains(out, "running: 1 queued") {
		t.Errorf("sweep list: exit %d\n%s\n%s", code, out, errOut)
	}
	doc := writeJSONFile(t, t.TempDir(), "x.json", labtest.ResultDoc("run-x", "M"))
	if code, _, errOut = cliRun(t, env, "results", "import", doc); code != 0 {
		t.Fatalf("import: exit %d: %s", code, errOut)
	}
	code, out, errOut = cliRun(t, env, "results", "export", "--format", "csv")
	recs, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if code != 0 || err != nil || len(recs) != 3 || recs[0][0] != "run_id" || recs[1][0] != "run-x" || recs[1][5] != "M" {
		t.Errorf("export csv: exit %d, %v\n%s\n%s", code, err, out, errOut)
	}
	code, out, errOut = cliRun(t, env, "results", "export", "--format", "json")
	var runs []protocol.Run
	if code != 0 || json.Unmarshal([]byte(out), &runs) != nil || len(runs) != 1 || runs[0].ID != "run-x" {
		t.Errorf("export json: exit %d\n%s\n%s", code, out, errOut)
	}
}

// TestSweepAnswer: `sweep --wait` and `sweep watch` end with the answer for
// the sweep's runs, read where the sweep measured.
func TestSweepAnswer(t *testing.T) {
	l := labtest.Start(t, controller.Options{})
	env := map[string]string{"VLMFLEET_CONTROLLER": l.Ctl.HTTPURL(), "VLMFLEET_TOKEN": l.Ctl.APIToken()}
	doc := labtest.ResultDoc("run-s", "Qwen3-VL-4B-Instruct")
	doc.SweepID = "sw-1"
	if code, _, errOut := cliRun(t, env, "results", "import", writeJSONFile(t, t.TempDir(), "s.json", doc)); code != 0 {
		t.Fatalf("import: exit %d: %s", code, errOut)
	}
	var out, errb strings.Builder
	c := &cli{stdout: &out, stderr: &errb, getenv: func(k string) string { return env[k] }}
	cl, err := newClient(c, "", "")
	if err != nil {
		t.Fatal(err)
	}
	w := protocol.DefaultWorkload()
	w.Sizes, w.Cameras = []string{"720p"}, []int{2, 1}
	if err := writeSweepAnswer(l.Ctx, c, cl, api.SweepView{Sweep: protocol.Sweep{ID: "sw-1", Workload: w}}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"The sweep's runs: the explorer at 720p, 1 camera", "cameras back to back; judged by mean response time within 3 s", "Qwen3-VL-4B-Instruct  4.4B", "1.31 s", "2+", "PASS", "starts answering a single camera"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("answer lacks %q:\n%s", want, out.String())
		}
	}
}
