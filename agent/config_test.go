package agent

import (
	"os"
	"strings"
	"testing"

	"github.com/vlmfleet/vlmfleet/agent/engine"
	"github.com/vlmfleet/vlmfleet/internal/testutil"
)

func TestExampleConfigParses(t *testing.T) {
	cfg, err := LoadConfig("../deploy/agent.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ID != "agx-orin-01" || len(cfg.Deployments) != 2 {
		t.Fatalf("parsed %+v", cfg)
	}
	if cfg.Deployments[0].Engine.Kind != "llamacpp" || cfg.Deployments[1].Engine.Kind != "vllm" {
		t.Fatalf("engines %+v", cfg.Deployments)
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
	cases := map[string]struct {
		mutate func(*Config)
		want   string
	}{
		"id":        {func(c *Config) { c.ID = "a.b" }, "id:"},
		"none":      {func(c *Config) { c.Deployments = nil }, "deployments: none"},
		"dup":       {func(c *Config) { c.Deployments = append(c.Deployments, c.Deployments[0]) }, "used twice"},
		"model":     {func(c *Config) { c.Deployments[0].Model = "" }, "deployments[0].model"},
		"telemetry": {func(c *Config) { c.Telemetry.Source = "gpu" }, "telemetry.source"},
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
