package agent

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

// What a join wrote is found again from the configuration alone, and
// gives the agent what its configuration leaves unset.
func TestApplyJoined(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{ID: "orin1", SpoolDir: filepath.Join(dir, "spool")}
	creds, joined := JoinPaths(cfg)
	if creds != filepath.Join(dir, "orin1.nk") || joined != filepath.Join(dir, "orin1.join.json") {
		t.Fatalf("paths %s, %s", creds, joined)
	}
	if got, err := ApplyJoined(cfg); err != nil || got.NATSURL != "" || got.NATSCredentials != "" {
		t.Fatalf("without a join: %+v, %v", got, err)
	}
	if err := writeJoined(joined, Joined{AgentID: "orin1", NATSURL: "tls://ctl:4222", NATSCAPin: "sha256:ab"}); err != nil {
		t.Fatal(err)
	}
	got, err := ApplyJoined(cfg)
	if err != nil || got.NATSURL != "tls://ctl:4222" || got.NATSCAPin != "sha256:ab" || got.NATSCredentials != creds {
		t.Fatalf("joined: %+v, %v", got, err)
	}
	cfg.NATSURL, cfg.NATSCA = "tls://mine:4222", "/etc/ca.pem"
	if got, _ := ApplyJoined(cfg); got.NATSURL != "tls://mine:4222" || got.NATSCAPin != "" {
		t.Fatalf("the configuration's settings must win: %+v", got)
	}
	other := Config{ID: "orin2", NATSCredentials: creds, SpoolDir: cfg.SpoolDir}
	if _, err := ApplyJoined(other); err == nil || !strings.Contains(err.Error(), "joined as agent orin1") {
		t.Fatalf("another id: %v", err)
	}
}

// A join that cannot reach its controller leaves no file behind (the
// spool's directory, checked before the join, is made as at start).
func TestJoinUnreachableLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	js := "vlmfleet-join:1:0123456789ab:" + strings.Repeat("A", 43) + ":sha256:" + strings.Repeat("0", 64) + ":https://127.0.0.1:1"
	_, err := Join(context.Background(), Config{ID: "orin1", SpoolDir: filepath.Join(dir, "spool")}, js, zerolog.Nop())
	if err == nil || !strings.Contains(err.Error(), "cannot reach the controller at https://127.0.0.1:1") {
		t.Fatalf("join: %v", err)
	}
	var left []string
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			left = append(left, p)
		}
		return err
	})
	if len(left) != 0 {
		t.Fatalf("left %v", left)
	}
}

func FuzzDecodeJoined(f *testing.F) {
	f.Add([]byte(`{"agent_id":"orin1","controller":"https://ctl:8080","token_id":"0123456789ab","joined_at":"2026-01-01T00:00:00Z","nats_url":"tls://ctl:4222","nats_ca_pin":"sha256:00"}`))
	f.Add([]byte(`{"agent_id":"orin1","nats_url":""}`))
	f.Add([]byte(`{"agent_id":"orin1","nats_url":"x"} {}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		j, err := DecodeJoined(data)
		if err == nil && (j.AgentID == "" || j.NATSURL == "") {
			t.Fatalf("accepted %+v", j)
		}
	})
}

// The credentials' directory must be the agent's user's alone, as the
// spool must, wherever nats_credentials puts it: one that others may write
// to is refused before anything is sent (the controller here cannot be
// reached, which the join would otherwise say) and gets no file.
func TestJoinRefusesCredentialsWhereOthersMayWrite(t *testing.T) {
	open := filepath.Join(t.TempDir(), "shared")
	if err := os.Mkdir(open, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	js := "vlmfleet-join:1:0123456789ab:" + strings.Repeat("A", 43) + ":sha256:" + strings.Repeat("0", 64) + ":https://127.0.0.1:1"
	cfg := Config{ID: "orin1", SpoolDir: filepath.Join(t.TempDir(), "spool"), NATSCredentials: filepath.Join(open, "orin1.nk")}
	_, err := Join(context.Background(), cfg, js, zerolog.Nop())
	want := "the agent's credentials cannot go in " + open + ": " + open + " may be written by others (mode 0777)"
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "no use of the join token spent") {
		t.Fatalf("join: %v; want it to say %q", err, want)
	}
	if entries, _ := os.ReadDir(open); len(entries) != 0 {
		t.Fatalf("left %v", entries)
	}
}
