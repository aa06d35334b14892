package agent

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vlmfleet/vlmfleet/agent/engine"
	"github.com/vlmfleet/vlmfleet/agent/power"
	"github.com/vlmfleet/vlmfleet/internal/testutil"
	"github.com/vlmfleet/vlmfleet/protocol"
)

func TestExampleConfigParses(t *testing.T) {
	cfg, err := LoadConfig("../deploy/agent.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ID != "agx-orin-01" || len(cfg.Deployments) != 2 || cfg.Labels["site"] != "lab1" {
		t.Fatalf("parsed %+v", cfg)
	}
	if cfg.Deployments[0].Engine.Kind != "llamacpp" || cfg.Deployments[1].Engine.Kind != "vllm" {
		t.Fatalf("engines %+v", cfg.Deployments)
	}
	if cfg.Power.Switch || cfg.Power.helper() != nil {
		t.Fatalf("the example switches power: %+v", cfg.Power)
	}
	cfg = cfg.withDefaults("host")
	if err := cfg.Validate(engine.Env{ModelRoots: cfg.ModelRoots}); err != nil {
		t.Fatalf("example config invalid: %v", err)
	}
}

func TestConfigErrorsNameLineAndField(t *testing.T) {
	cases := map[string]struct{ yaml, want string }{
		"unknown field": {"id: a\ndeployments:\n  - id: x\n    modle: y\n", "[4:5]"},
		"bad type":      {"id: a\ndeployments:\n  - id: x\n    params_b: many\n", "[4:"},
		"empty":         {"", "empty"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := ParseConfig([]byte(tc.yaml))
			testutil.WantError(t, err, tc.want)
		})
	}
}

func TestConfigValidation(t *testing.T) {
	base := func() Config {
		return Config{ID: "a1", Telemetry: TelemetryConfig{Source: "auto"}, Deployments: []DeploymentConfig{{
			ID: "d1", Model: "M", Engine: engine.Config{Kind: "external", URL: "http://127.0.0.1:1/v1"},
		}}}
	}
	aFile := testutil.WriteFile(t, filepath.Join(t.TempDir(), "spool"), "")
	cases := map[string]struct {
		mutate func(*Config)
		want   string
	}{
		"spool size": {func(c *Config) { c.SpoolMaxMiB = -1 }, "spool_max_mib: -1, want 1 to"},
		"spool dir":  {func(c *Config) { c.SpoolDir = aFile }, "spool_dir: " + aFile + " is a file, want a directory"},
		"id":         {func(c *Config) { c.ID = "a.b" }, "id:"},
		"none":       {func(c *Config) { c.Deployments = nil }, "deployments: none"},
		"dup":        {func(c *Config) { c.Deployments = append(c.Deployments, c.Deployments[0]) }, "ids must be unique"},
		"model":      {func(c *Config) { c.Deployments[0].Model = "" }, "deployments[0].model"},
		"telemetry":  {func(c *Config) { c.Telemetry.Source = "gpu" }, "telemetry.source"},
		"label key":  {func(c *Config) { c.Labels = map[string]string{"my site": "x"} }, `labels: key "my site": want 1-63 letters`},
		"label value": {func(c *Config) { c.Labels = map[string]string{"site": strings.Repeat("x", 300)} },
			"labels.site: 300 bytes, at most 256"},
		"power both": {func(c *Config) {
			c.Power = PowerConfig{Switch: true, Socket: "/run/p.sock", Command: []string{"/bin/x"}}
		},
			"power: socket and command at once"},
		"power socket":  {func(c *Config) { c.Power.Socket = "power.sock" }, `power.socket: "power.sock", want an absolute path`},
		"power command": {func(c *Config) { c.Power.Command = []string{"vlmfleet-power"} }, `power.command[0]: "vlmfleet-power", want the helper's absolute path`},
		"power conf":    {func(c *Config) { c.Power.Conf = "nvpmodel.conf" }, `power.nvpmodel_conf: "nvpmodel.conf", want an absolute path`},
		"power gpus":    {func(c *Config) { c.Power.GPUs = []int{0, 1, 0} }, "power.gpus[2]: GPU 0 twice"},
		"power gpu":     {func(c *Config) { c.Power.GPUs = []int{-1} }, "power.gpus[0]: -1, want a GPU index"},
		"power settle":  {func(c *Config) { c.Power.SettleTimeout = -1 }, "power.settle_timeout: -1ns is negative"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := base()
			tc.mutate(&c)
			testutil.WantError(t, c.Validate(engine.Env{}), tc.want)
		})
	}
	if err := base().Validate(engine.Env{}); err != nil {
		t.Fatalf("valid config refused: %v", err)
	}
}

// The example's power block, uncommented, is valid and names the socket.
func TestExamplePowerBlockParses(t *testing.T) {
	b, err := os.ReadFile("../deploy/agent.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var block []string
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "# power:") || len(block) > 0 && strings.HasPrefix(line, "#   ") {
			block = append(block, strings.TrimPrefix(line, "# "))
		} else if len(block) > 0 {
			break
		}
	}
	cfg, err := ParseConfig([]byte(strings.Join(block, "\n")))
	if err != nil {
		t.Fatalf("%v\n%s", err, strings.Join(block, "\n"))
	}
	if err := cfg.Power.validate(); err != nil {
		t.Fatal(err)
	}
	if h, ok := cfg.Power.helper().(power.Socket); !ok || h.Path != DefaultPowerSocket {
		t.Errorf("helper %v", cfg.Power.helper())
	}
	off := PowerConfig{}
	if r := off.switchReason(); !strings.Contains(r, "power.switch is off") {
		t.Errorf("reason %q", r)
	}
}

// One wrong deployment is reported with its reason and the others are
// offered; the agent-wide fields still stop the agent.
func TestCheckDeployments(t *testing.T) {
	root := t.TempDir()
	for _, f := range []string{"tiny.gguf", "mmproj-tiny.gguf"} {
		if err := os.WriteFile(filepath.Join(root, f), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env := engine.Env{ModelRoots: []string{root}}
	llama := func(id, model string) DeploymentConfig {
		return DeploymentConfig{ID: id, Model: "Tiny", Engine: engine.Config{Kind: engine.KindLlamaCpp, Model: model, MMProj: "mmproj-tiny.gguf"}}
	}
	ext := DeploymentConfig{ID: "remote", Model: "Remote", Engine: engine.Config{Kind: engine.KindExternal, URL: "http://127.0.0.1:1/v1"}}
	twice := DeploymentConfig{ID: "twice", Model: "M", Engine: ext.Engine}
	cfg := Config{ID: "a1", Telemetry: TelemetryConfig{Source: "auto"}, Deployments: []DeploymentConfig{
		llama("good", "tiny.gguf"),
		llama("missing", "gone.gguf"),
		ext,
		{ID: "nomodel", Engine: ext.Engine},
		{ID: "bad id", Model: "M", Engine: ext.Engine},
		{ID: "nokind", Model: "M", Engine: engine.Config{Model: "x"}},
		twice, twice,
		{ID: strings.Repeat("x", 300), Model: "M", Engine: ext.Engine},
	}}
	ok, broken := cfg.CheckDeployments(env)
	var ids []string
	for _, d := range ok {
		ids = append(ids, d.ID)
	}
	if strings.Join(ids, ",") != "good,remote" {
		t.Errorf("offered %v, want good and remote", ids)
	}
	want := map[string]string{
		"missing": `deployments[1].engine: model: "gone.gguf"`,
		"nomodel": "deployments[3].model: empty",
		"bad id":  `deployments[4].id: agent id "bad id"`,
		"nokind":  "deployments[5].engine: kind: missing; want one of",
		"twice":   "is used by deployments[6] and deployments[7]; ids must be unique",
	}
	seen := map[string]int{}
	for _, b := range broken {
		seen[b.ID]++
		if w, ok := want[b.ID]; ok && !strings.Contains(b.Reason, w) {
			t.Errorf("%s: reason %q lacks %q", b.ID, b.Reason, w)
		}
		if len(b.ID) > protocol.MaxNameLen || len(b.Reason) > protocol.MaxLineLen || b.Reason == "" {
			t.Errorf("%.40s: id of %d bytes, reason %q: beyond the hello's limits", b.ID, len(b.ID), b.Reason)
		}
	}
	if seen["twice"] != 2 || seen["missing"] != 1 || seen["nomodel"] != 1 || seen["bad id"] != 1 || seen["nokind"] != 1 || len(broken) != 7 {
		t.Errorf("broken %+v", broken)
	}
	if b := broken[0]; b.Engine != engine.KindLlamaCpp || b.Model != "Tiny" {
		t.Errorf("broken entry %+v: want its engine kind and model", b)
	}
	// The whole configuration is still checked strictly by Validate.
	testutil.WantError(t, cfg.Validate(env), `deployments[1].engine: model: "gone.gguf"`)
}

func TestSanitizeID(t *testing.T) {
	for in, want := range map[string]string{"jetson.lab": "jetson-lab", "": "agent", "AGX_01": "AGX_01"} {
		if got := sanitizeID(in); got != want {
			t.Errorf("sanitizeID(%q) = %q, want %q", in, got, want)
		}
	}
	if got := sanitizeID(strings.Repeat("x", 100)); len(got) > 64 {
		t.Errorf("id of %d characters", len(got))
	}
}

func FuzzParseConfig(f *testing.F) {
	if data, err := os.ReadFile("../deploy/agent.example.yaml"); err == nil {
		f.Add(data)
	}
	f.Add([]byte("id: [\n"))
	f.Add([]byte("deployments: {a: 1}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := ParseConfig(data)
		if err == nil {
			_ = cfg.withDefaults("h").Validate(engine.Env{})
		}
	})
}

// Labels come from the configuration's "labels" map.
func TestConfigLabels(t *testing.T) {
	cfg, err := ParseConfig([]byte("id: a1\nlabels:\n  site: lab1\n  rack: \"3\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Labels["site"] != "lab1" || cfg.Labels["rack"] != "3" || len(cfg.Labels) != 2 {
		t.Fatalf("labels %v", cfg.Labels)
	}
	_, err = ParseConfig([]byte("id: a1\nlabels: [site]\n"))
	testutil.WantError(t, err, "[2:")
}

// The spool lives under the log directory; without one, in a directory of
// the user's own under the system temp dir, which other users share.
func TestSpoolDirDefault(t *testing.T) {
	if got, want := (Config{ID: "a1", LogDir: "/var/log/vlmfleet"}).withDefaults("h").SpoolDir, "/var/log/vlmfleet/spool/a1"; got != want {
		t.Errorf("spool_dir with log_dir set: %s, want %s", got, want)
	}
	want := filepath.Join(os.TempDir(), fmt.Sprintf("vlmfleet-spool-%d", os.Getuid()), "a1")
	if got := (Config{ID: "a1"}).withDefaults("h").SpoolDir; got != want {
		t.Errorf("spool_dir without log_dir: %s, want %s", got, want)
	}
	if got := (Config{ID: "a1", SpoolDir: "/data/spool"}).withDefaults("h").SpoolDir; got != "/data/spool" {
		t.Errorf("spool_dir set: %s, want it kept", got)
	}
}
