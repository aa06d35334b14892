package agent

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nkeys"
	"github.com/rs/zerolog"

	"github.com/vlmfleet/vlmfleet/agent/outbox"
	"github.com/vlmfleet/vlmfleet/internal/atomicfile"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// Join enrols the agent cfg describes with the controller that join (a
// join string) names, and returns cfg with what later starts use too
// (ApplyJoined). The agent's nkey pair is made here: only its public
// half is sent, over TLS trusted by the join string's CA pin alone, and
// its seed is written to the credentials file (JoinPaths), readable by
// its owner only, in a directory no other user may write to, checked
// before a use is spent. A refusal, or any failure, leaves no file behind
// and the files of an earlier join as they were. An agent that already
// joined with the same token starts with what that join wrote, so that a
// --join left in a service's command line costs no use at each start.
// The join string is never logged.
func Join(ctx context.Context, cfg Config, join string, log zerolog.Logger) (Config, error) {
	js, err := protocol.ParseJoinString(join)
	if err != nil {
		return cfg, err
	}
	host, _ := os.Hostname()
	d := cfg.withDefaults(host)
	id := d.ID
	if err := protocol.ValidateAgentID(id); err != nil {
		return cfg, fmt.Errorf("%w: start the agent with --id ID (or id: in its config)", err)
	}
	creds, path := JoinPaths(cfg)
	if err := checkJoinDirs(d.SpoolDir, filepath.Dir(creds)); err != nil {
		return cfg, err
	}
	if prev, err := loadJoined(path); err == nil && prev.TokenID == js.TokenID && prev.AgentID == id {
		if _, err := os.Stat(creds); err == nil {
			log.Info().Str("controller", prev.Controller).Str("join_token", js.TokenID).Str("credentials", creds).
				Msg("already joined with this token: starting with the credentials it wrote")
			return ApplyJoined(cfg)
		}
	}
	kp, err := nkeys.CreateUser()
	if err != nil {
		return cfg, fmt.Errorf("join: %w", err)
	}
	defer kp.Wipe()
	pub, _ := kp.PublicKey()
	seed, err := kp.Seed()
	if err != nil {
		return cfg, fmt.Errorf("join: %w", err)
	}
	log.Info().Str("controller", js.URL).Str("join_token", js.TokenID).Str("agent_id", id).Msg("joining the controller")
	ans, err := postJoin(ctx, js, protocol.JoinRequest{TokenID: js.TokenID, Secret: js.Secret, AgentID: id, PublicKey: pub})
	if err == nil && (ans.AgentID != id || ans.PublicKey != pub) {
		err = fmt.Errorf("the controller at %s answered the join for agent %s, key %s: not this one's (%s, %s)", js.URL, ans.AgentID, ans.PublicKey, id, pub)
	}
	if err != nil {
		return cfg, err
	}
	j := Joined{AgentID: id, Controller: js.URL, TokenID: js.TokenID, JoinedAt: time.Now().UTC(), NATSURL: ans.NATSURL, NATSCAPin: ans.CAFingerprint}
	if err := writeJoinFiles(creds, path, seed, j); err != nil {
		return cfg, fmt.Errorf("enrolled as agent %s, but %w: join again with a new join string", id, err)
	}
	log.Info().Str("agent_id", id).Str("credentials", creds).Str("nats", protocol.RedactURL(ans.NATSURL)).
		Msg("joined: later starts use these credentials and need no join string")
	// Only where the files went by default: a spool_dir, log_dir or
	// nats_credentials someone set is where they want them.
	chosen := cfg.SpoolDir != "" || cfg.LogDir != "" || cfg.NATSCredentials != ""
	if !chosen && strings.HasPrefix(creds, filepath.Clean(os.TempDir())+string(filepath.Separator)) {
		log.Warn().Str("credentials", creds).Msg("the credentials are in the temp dir, which a reboot may empty: " +
			"set log_dir or spool_dir (they go beside spool_dir) or nats_credentials in the agent's config, and join again")
	}
	if cfg.NATSCredentials == "" {
		cfg.NATSCredentials = creds
	}
	return ApplyJoined(cfg)
}

// checkJoinDirs refuses a join, before it spends a use of the token or
// writes a file, whose files would lie where another user could replace
// them, or where they cannot be written. The credentials' directory holds
// the join settings, which name the NATS server and the CA the agent
// trusts; the spool, which the agent refuses at start on the same grounds
// (outbox.Open), is beside them by default, so both must be the agent's
// user's alone (outbox.SecureDir), each missing directory made 0700.
func checkJoinDirs(spool, credsDir string) error {
	const nothing = "nothing was sent, no use of the join token spent"
	if _, err := outbox.SecureDir(spool); err != nil {
		return fmt.Errorf("agent config: spool_dir: spool %s: %w (%s)", spool, err, nothing)
	}
	if _, err := outbox.SecureDir(credsDir); err != nil {
		return fmt.Errorf("the agent's credentials cannot go in %s: %w (%s)", credsDir, err, nothing)
	}
	if err := checkWritable(credsDir); err != nil {
		return fmt.Errorf("cannot write the agent's credentials in %s (%w): set nats_credentials: in its config to a file it may write", credsDir, err)
	}
	return nil
}

// checkWritable checks that a file can be made in dir.
func checkWritable(dir string) error {
	f, err := os.CreateTemp(dir, ".join-probe-*")
	if err != nil {
		return err
	}
	f.Close()
	return os.Remove(f.Name())
}

// writeJoinFiles writes the seed and the settings, each whole or not at
// all; when the second fails, the first is removed.
func writeJoinFiles(creds, path string, seed []byte, j Joined) error {
	if _, err := atomicfile.Write(creds, 0o600, func(w io.Writer) error {
		_, err := w.Write(append(bytes.Clone(seed), '\n'))
		return err
	}); err != nil {
		return fmt.Errorf("writing the credentials %s: %w", creds, err)
	}
	if err := writeJoined(path, j); err != nil {
		_ = os.Remove(creds)
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
