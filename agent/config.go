package agent

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/goccy/go-yaml"

	"github.com/vlmfleet/vlmfleet/agent/devicefacts"
	"github.com/vlmfleet/vlmfleet/agent/engine"
	"github.com/vlmfleet/vlmfleet/agent/outbox"
	"github.com/vlmfleet/vlmfleet/agent/power"
	"github.com/vlmfleet/vlmfleet/agent/telemetry"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// Config is the agent's local configuration. Everything that names an
// executable or a file lives here and nowhere else: a job from the network
// only picks a deployment by id.
type Config struct {
	// ID identifies the agent in subjects and consumer names; default: the hostname.
	ID      string `yaml:"id"`
	NATSURL string `yaml:"nats_url"`
	// NATSCredentials is the file holding the agent's nkey seed, as
	// `vlmfleet agent-creds create ID` wrote it; the controller's embedded
	// NATS server admits no agent without one.
	NATSCredentials string `yaml:"nats_credentials"`
	// NATSSeed is the agent's nkey seed itself, for agents started in the
	// controller's process (the demo); never from YAML.
	NATSSeed string `yaml:"-"`
	// NATSCA is a file with the CA certificate the NATS server's TLS
	// certificate must be signed by: a copy of the controller's
	// <data-dir>/tls/ca.pem, or the operator's CA. NATSCAPin instead
	// trusts the CA whose fingerprint it is ("sha256:<hex>", as the
	// controller logs it), as the server presents it. Either makes the
	// connection TLS; with neither, a server that asks for TLS must
	// have a certificate the system trusts.
	NATSCA    string `yaml:"nats_ca"`
	NATSCAPin string `yaml:"nats_ca_pin"`
	// ModelRoots confine every model file an engine may load.
	ModelRoots []string `yaml:"model_roots"`
	// ImageRoots are directories a workload's image_set may name (own camera snapshots).
	ImageRoots []string `yaml:"image_roots"`
	LogDir     string   `yaml:"log_dir"`
	// SpoolDir holds the messages that must reach the controller (job
	// states, results) until JetStream has acknowledged them, so that a
	// link that is down stops no measurement (agent/outbox); default
	// <log_dir>/spool/<id>, or <temp dir>/vlmfleet-spool-<uid>/<id> with no
	// log_dir. It must survive a reboot: put it on the device's storage,
	// not on a tmpfs. What it holds is sent as the agent's own: one that
	// another user made or may write to is refused (outbox.Open).
	SpoolDir string `yaml:"spool_dir"`
	// SpoolMaxMiB bounds the spool (default 1024): a full spool makes the
	// job wait for the link, it never drops a message.
	SpoolMaxMiB int64 `yaml:"spool_max_mib"`
	// SysRoot prefixes device files read for facts and telemetry (tests use fixture trees).
	SysRoot   string          `yaml:"sysroot"`
	Telemetry TelemetryConfig `yaml:"telemetry"`
	// HeartbeatInterval is how often the agent says it is alive.
	HeartbeatInterval engine.Duration `yaml:"heartbeat_interval"`

	Deployments []DeploymentConfig `yaml:"deployments"`

	// Power says whether jobs may switch the device's power mode or GPU
	// power limit, and through which privileged path.
	Power PowerConfig `yaml:"power"`

	// Labels describe the agent to the lab ("site: lab1", "rack: 3"); they
	// are announced in its hello, shown on /fleet and selectable in a
	// sweep's agent_labels.
	Labels map[string]string `yaml:"labels"`

	// Simulate names a simulated device ("Jetson AGX Orin"); set by
	// --simulate, or by deployments that are all of engine kind sim (their
	// sim_device, withSimulatedDevice); never a YAML field of its own, so a
	// lab agent with real engines cannot be simulated by accident.
	Simulate   string  `yaml:"-"`
	SimSpeedup float64 `yaml:"-"`
}

// TelemetryConfig picks the telemetry source.
type TelemetryConfig struct {
	// Source: auto, tegrastats, nvidia-smi, host, simulated or off.
	Source   string          `yaml:"source"`
	Interval engine.Duration `yaml:"interval"`
}

// DeploymentConfig is one model this agent can serve.
type DeploymentConfig struct {
	ID           string        `yaml:"id"`
	Model        string        `yaml:"model"`
	ParamsB      float64       `yaml:"params_b"`
	Quantization string        `yaml:"quantization"`
	Engine       engine.Config `yaml:"engine"`
}

// LoadConfig reads a YAML configuration file. Errors name the file, the line
// and the field.
func LoadConfig(path string) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("agent config: %w", err)
	}
	cfg, err := ParseConfig(data)
	if err != nil {
		return Config{}, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, nil
}

// ParseConfig parses YAML configuration; unknown fields are errors so that a
// typo is not silently ignored.
func ParseConfig(data []byte) (Config, error) {
	var cfg Config
	dec := yaml.NewDecoder(bytes.NewReader(data), yaml.DisallowUnknownField())
	if err := dec.Decode(&cfg); err != nil {
		if errors.Is(err, io.EOF) {
			return Config{}, fmt.Errorf("the configuration is empty")
		}
		return Config{}, errors.New(yaml.FormatError(err, false, true))
	}
	return cfg, nil
}

// withDefaults fills what the operator left out.
func (c Config) withDefaults(hostname string) Config {
	if c.ID == "" {
		c.ID = sanitizeID(hostname)
	}
	if c.HeartbeatInterval == 0 {
		c.HeartbeatInterval = engine.Duration(3 * time.Second)
	}
	if c.Telemetry.Source == "" {
		c.Telemetry.Source = telemetry.SourceAuto
		if c.Simulate != "" {
			c.Telemetry.Source = telemetry.SourceSimulated
		}
	}
	if c.Telemetry.Interval == 0 {
		c.Telemetry.Interval = engine.Duration(500 * time.Millisecond)
	}
	c.SysRoot = devicefacts.SysRootOr(c.SysRoot)
	if c.SpoolDir == "" {
		c.SpoolDir = filepath.Join(c.LogDir, "spool", c.ID)
		if c.LogDir == "" {
			// The system temp dir is shared: a directory per user, so that
			// one user's spool (0700) does not keep another's agent from
			// starting. One that another user made first is refused
			// (outbox.Open): what it holds would be sent as this agent's.
			c.SpoolDir = filepath.Join(os.TempDir(), fmt.Sprintf("vlmfleet-spool-%d", os.Getuid()), c.ID)
		}
	}
	if c.LogDir == "" {
		c.LogDir = os.TempDir()
	}
	if c.SpoolMaxMiB == 0 {
		c.SpoolMaxMiB = outbox.DefaultMaxBytes >> 20
	}
	if c.Power.SettleTimeout == 0 {
		c.Power.SettleTimeout = engine.Duration(power.DefaultSettle)
	}
	if c.Power.RestoreAfter == 0 {
		c.Power.RestoreAfter = defaultRestoreAfter
	}
	return c
}

// maxSpoolMiB bounds spool_max_mib (4 TiB): a larger figure is a typo.
const maxSpoolMiB = 4 << 20

// Validate reports the first wrong field and what is allowed, in the
// agent-wide settings and in every deployment: the whole configuration is
// right only when it returns nil. An agent starts with less (New): see
// CheckDeployments.
func (c Config) Validate(env engine.Env) error {
	if err := c.validateAgent(); err != nil {
		return err
	}
	if len(c.Deployments) == 0 {
		return fmt.Errorf("deployments: none configured; an agent needs at least one model to serve")
	}
	if _, broken := c.CheckDeployments(env); len(broken) > 0 {
		return errors.New(broken[0].Reason)
	}
	return nil
}

// validateAgent checks the settings without which the agent cannot run at
// all: its id (its subjects and consumer) and its telemetry source.
func (c Config) validateAgent() error {
	if err := protocol.ValidateAgentID(c.ID); err != nil {
		return fmt.Errorf("id: %w", err)
	}
	if !slices.Contains(telemetry.Sources(), c.Telemetry.Source) {
		return fmt.Errorf("telemetry.source: %q, want one of %s", c.Telemetry.Source, strings.Join(telemetry.Sources(), ", "))
	}
	if c.SpoolMaxMiB < 0 || c.SpoolMaxMiB > maxSpoolMiB {
		return fmt.Errorf("spool_max_mib: %d, want 1 to %d (MiB; 0 or unset: %d)", c.SpoolMaxMiB, maxSpoolMiB, outbox.DefaultMaxBytes>>20)
	}
	if fi, err := os.Stat(c.SpoolDir); err == nil && !fi.IsDir() {
		return fmt.Errorf("spool_dir: %s is a file, want a directory (made if missing)", c.SpoolDir)
	}
	if err := c.Power.validate(); err != nil {
		return err
	}
	if _, err := c.withSimulatedDevice(); err != nil {
		return err
	}
	return protocol.ValidateLabels("labels", c.Labels)
}

// CheckDeployments splits the configured deployments into those the agent
// can serve and those it cannot, each of these with the reason (the entry,
// the field and what is allowed), bounded as a hello carries it. Two
// entries with one id are both refused: which of them a job naming the id
// meant cannot be known, and measuring the other would file its results
// under the wrong engine or model.
func (c Config) CheckDeployments(env engine.Env) (ok []DeploymentConfig, broken []protocol.BrokenDeployment) {
	uses := map[string][]string{}
	for i, d := range c.Deployments {
		uses[d.ID] = append(uses[d.ID], fmt.Sprintf("deployments[%d]", i))
	}
	for i, d := range c.Deployments {
		if err := checkDeployment(d, uses[d.ID], env); err != nil {
			broken = append(broken, protocol.BrokenDeployment{
				ID:     protocol.Clip(d.ID, protocol.MaxNameLen, "..."),
				Engine: protocol.Clip(d.Engine.Kind, protocol.MaxNameLen, "..."),
				Model:  protocol.Clip(d.Model, protocol.MaxNameLen, "..."),
				Reason: protocol.Clip(fmt.Sprintf("deployments[%d].%v", i, err), protocol.MaxLineLen, "..."),
			})
			continue
		}
		ok = append(ok, d)
	}
	return ok, broken
}

// checkDeployment checks one entry; its error names the field below the
// entry ("engine: model: ..."). uses are the entries that carry its id.
func checkDeployment(d DeploymentConfig, uses []string, env engine.Env) error {
	if d.ID == "" {
		return fmt.Errorf("id: empty; give each deployment a short unique id")
	}
	if err := protocol.ValidateAgentID(d.ID); err != nil {
		return fmt.Errorf("id: %w", err)
	}
	if len(uses) > 1 {
		return fmt.Errorf("id: %q is used by %s; ids must be unique", d.ID, strings.Join(uses, " and "))
	}
	if strings.TrimSpace(d.Model) == "" {
		return fmt.Errorf("model: empty; name the model as people know it (e.g. Qwen3-VL-4B-Instruct)")
	}
	if err := d.Engine.Validate(env); err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	return nil
}

// sanitizeID turns a hostname into a valid agent id.
func sanitizeID(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
		if b.Len() == 64 {
			break
		}
	}
	id := strings.Trim(b.String(), "-_")
	if id == "" {
		return "agent"
	}
	return id
}
