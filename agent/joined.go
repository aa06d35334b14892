package agent

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/vlmfleet/vlmfleet/internal/atomicfile"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// Joined is what a join wrote beside the agent's credentials, so that
// later starts reach the controller without the join string: how to
// reach NATS, as the controller answered the join.
type Joined struct {
	AgentID string `json:"agent_id"`
	// Controller is the API the agent joined.
	Controller string    `json:"controller"`
	TokenID    string    `json:"token_id"`
	JoinedAt   time.Time `json:"joined_at"`
	NATSURL    string    `json:"nats_url"`
	NATSCAPin  string    `json:"nats_ca_pin,omitempty"`
}

// maxJoinedFile bounds the file: it holds a few short lines.
const maxJoinedFile = 16 << 10

// JoinPaths are where a join writes agent cfg's credentials and what
// later starts need: nats_credentials when the configuration names it,
// else <id>.nk beside the spool directory (the directory holding
// spool_dir: /var/lib/vlmfleet for spool_dir /var/lib/vlmfleet/spool),
// which survives a reboot as the spool must; the settings are the
// credentials' name with .join.json for .nk.
func JoinPaths(cfg Config) (creds, joined string) {
	host, _ := os.Hostname()
	d := cfg.withDefaults(host)
	creds = d.NATSCredentials
	if creds == "" {
		creds = filepath.Join(filepath.Dir(filepath.Clean(d.SpoolDir)), d.ID+".nk")
	}
	return creds, strings.TrimSuffix(creds, ".nk") + ".join.json"
}

// DecodeJoined reads a joined settings file: one JSON document, no
// unknown fields, an agent id and a NATS URL.
func DecodeJoined(data []byte) (Joined, error) {
	var j Joined
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&j); err != nil {
		return Joined{}, protocol.DescribeJSONError(data, dec.InputOffset(), err)
	}
	if dec.More() {
		return Joined{}, errors.New("trailing data after the JSON document")
	}
	if err := protocol.ValidateAgentID(j.AgentID); err != nil {
		return Joined{}, err
	}
	if j.NATSURL == "" || strings.ContainsAny(j.NATSURL, " \t\r\n") {
		return Joined{}, errors.New("nats_url: want the NATS URL the controller answered")
	}
	return j, nil
}

// loadJoined reads the settings file at path; a missing one is
// fs.ErrNotExist.
func loadJoined(path string) (Joined, error) {
	f, err := os.Open(path)
	if err != nil {
		return Joined{}, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxJoinedFile+1))
	if err == nil && len(data) > maxJoinedFile {
		err = fmt.Errorf("over %d bytes", maxJoinedFile)
	}
	var j Joined
	if err == nil {
		j, err = DecodeJoined(data)
	}
	if err != nil {
		return Joined{}, fmt.Errorf("%s: %w (remove it and join again: vlmfleet agent --join ...)", path, err)
	}
	return j, nil
}

func writeJoined(path string, j Joined) error {
	data, err := json.MarshalIndent(j, "", "  ")
	if err != nil {
		return err
	}
	_, err = atomicfile.Write(path, 0o600, func(w io.Writer) error {
		_, err := w.Write(append(data, '\n'))
		return err
	})
	return err
}

// ApplyJoined gives cfg what an earlier join wrote (JoinPaths): its
// credentials, and the NATS URL and CA pin the controller answered,
// for each that the configuration (or a flag) leaves unset: what the
// operator configured wins. Without a join's files cfg is returned as
// it is.
func ApplyJoined(cfg Config) (Config, error) {
	creds, path := JoinPaths(cfg)
	j, err := loadJoined(path)
	if errors.Is(err, fs.ErrNotExist) {
		return cfg, nil
	}
	if err != nil {
		return cfg, err
	}
	host, _ := os.Hostname()
	if id := cfg.withDefaults(host).ID; j.AgentID != id {
		return cfg, fmt.Errorf("%s: joined as agent %s, but this agent is %s: start it with --id %s, or join again", path, j.AgentID, id, j.AgentID)
	}
	if cfg.NATSSeed == "" {
		cfg.NATSCredentials = cmp.Or(cfg.NATSCredentials, creds)
	}
	cfg.NATSURL = cmp.Or(cfg.NATSURL, j.NATSURL)
	if cfg.NATSCA == "" {
		cfg.NATSCAPin = cmp.Or(cfg.NATSCAPin, j.NATSCAPin)
	}
	return cfg, nil
}
