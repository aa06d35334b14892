package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/vlmfleet/vlmfleet/agent"
	"github.com/vlmfleet/vlmfleet/controller"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// postJoin sends a join as a device that did not make the key would,
// trusting the controller's CA, and returns the status and the answer.
func (l *joinLab) postJoin(t *testing.T, ctx context.Context, js protocol.JoinString, id, pub string) (int, string) {
	t.Helper()
	pem, err := os.ReadFile(filepath.Join(l.data, "tls", "ca.pem"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	body, _ := json.Marshal(protocol.JoinRequest{TokenID: js.TokenID, Secret: js.Secret, AgentID: id, PublicKey: pub})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, l.url+"/api/join", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// publicKeyIn reads the public half of the nkey seed in file.
func publicKeyIn(t *testing.T, file string) (string, nkeys.KeyPair) {
	t.Helper()
	seed, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	kp, err := nkeys.FromSeed(bytes.TrimSpace(seed))
	if err != nil {
		t.Fatal(err)
	}
	pub, err := kp.PublicKey()
	if err != nil {
		t.Fatal(err)
	}
	return pub, kp
}

// With one ordinary join string, real processes: a joined agent's public
// key (which the API lists) cannot be enrolled again under another id,
// nor can the controller's own key, and the agent goes on measuring; once
// revoked, a join for its id with its key is refused by any token, and
// nats-server keeps refusing the key.
func TestJoinKeyBindingRealProcesses(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	l := startJoinLab(t, ctx)
	js := l.createToken(t, ctx, "--uses", "5")
	dir := filepath.Join(l.root, "agent-victim")
	victim := startProc(t, l.logs, "agent-victim", nil, agentArgs("victim", dir, "--join", js.String())...)
	victim.WaitLogged(ctx, "joined: later starts use these credentials")
	waitOnline(t, ctx, l.cl, "victim", time.Time{})

	seedFile := filepath.Join(dir, "spool", agent.CredentialsFile("victim"))
	victimPub, victimKey := publicKeyIn(t, seedFile)
	ctlPub, _ := publicKeyIn(t, filepath.Join(l.data, controller.ControllerSeedFile))
	for id, pub := range map[string]string{"zzz": victimPub, "ctl": ctlPub} {
		if code, body := l.postJoin(t, ctx, js, id, pub); code != http.StatusConflict {
			t.Errorf("join %s with a key in use: %d %s", id, code, body)
		}
	}
	runSweep(t, ctx, l.cl, "victim")
	if data, _ := os.ReadFile(filepath.Join(l.logs, "agent-victim.log")); bytes.Contains(data, []byte("another agent's")) {
		t.Fatalf("the agent lost its rights:\n%s", data)
	}

	if code, out, errs := cliProc(t, ctx, l.cliEnv, "agent-creds", "revoke", "victim"); code != 0 {
		t.Fatalf("agent-creds revoke: exit %d: %s%s", code, out, errs)
	}
	reenrol := l.createToken(t, ctx, "--reenrol")
	for _, tok := range []protocol.JoinString{js, reenrol} {
		if code, body := l.postJoin(t, ctx, tok, "victim", victimPub); code != http.StatusForbidden || !strings.Contains(body, "was revoked") {
			t.Errorf("re-join of the revoked id with its key: %d %s", code, body)
		}
	}
	joined, err := os.ReadFile(filepath.Join(dir, "spool", "victim.join.json"))
	if err != nil {
		t.Fatal(err)
	}
	var j agent.Joined
	if err := json.Unmarshal(joined, &j); err != nil {
		t.Fatal(err)
	}
	_, err = nats.Connect(j.NATSURL, nats.Nkey(victimPub, victimKey.Sign), nats.RootCAs(filepath.Join(l.data, "tls", "ca.pem")),
		nats.CustomInboxPrefix(protocol.AgentInboxPrefix("victim")), nats.MaxReconnects(0))
	if !errors.Is(err, nats.ErrAuthorization) {
		t.Fatalf("the revoked key after the refused re-joins: %v, want an authorization violation", err)
	}
}
