package controller

import (
	"encoding/json"
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/controller/store"
	"github.com/vlmfleet/vlmfleet/internal/testutil"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// joinWithKey posts a join for id with public key pub as it is, as a
// device that did not make it would.
func (l *joinLab) joinWithKey(t *testing.T, js protocol.JoinString, id, pub string) (int, string) {
	t.Helper()
	return l.do(t, http.MethodPost, "/api/join", protocol.JoinRequest{TokenID: js.TokenID, Secret: js.Secret, AgentID: id, PublicKey: pub}, false)
}

// tokenUsed is how many enrolments token id has made.
func (l *joinLab) tokenUsed(t *testing.T, id string) int {
	t.Helper()
	tk, err := l.c.store.JoinToken(id)
	if err != nil {
		t.Fatal(err)
	}
	return tk.Used
}

// publishes checks that the agent signed in as nc still publishes on its
// own heartbeat subject, as the server's permission check sees it: the
// controller's own connection receives what it sent.
func publishes(t *testing.T, c *Controller, nc *nats.Conn, id string) {
	t.Helper()
	admin, _ := testutil.ConnectJS(t, c.NATSURL(), testutil.NkeyFile(t, c.NATSSeedFile()),
		nats.Secure(clientTLS(t, "", c.TLSFingerprint(), nil)))
	sub, err := admin.SubscribeSync(protocol.AgentSubject(id, protocol.KindHeartbeat))
	if err != nil || admin.Flush() != nil {
		t.Fatalf("subscribe: %v", err)
	}
	if err := nc.Publish(protocol.AgentSubject(id, protocol.KindHeartbeat), []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil || nc.LastError() != nil {
		t.Fatalf("%s publishing on its own subject: %v, %v", id, err, nc.LastError())
	}
	if _, err := sub.NextMsg(waitLimit); err != nil {
		t.Fatalf("%s's heartbeat did not arrive: %v (last error %v)", id, err, nc.LastError())
	}
}

// A public key belongs to one identity: a second agent id joining with an
// enrolled agent's key is refused without naming the holder, and the
// first agent keeps publishing; the controller's own key and a key that is
// no nkey are refused too; no refusal spends a use of the token.
func TestJoinBindsAKeyToOneIdentity(t *testing.T) {
	l := startJoinLab(t)
	js := l.create(t, api.JoinTokenRequest{Uses: 5})
	victim := newUserKey(t)
	if code, body := l.join(t, js, "victim", victim); code != http.StatusCreated {
		t.Fatalf("join victim: %d %s", code, body)
	}
	nc, err := l.connect(t, "victim", victim)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()

	code, body := l.joinWithKey(t, js, "zzz", pubOf(t, victim))
	if code != http.StatusConflict || !strings.Contains(body, "already enrolled under another agent id") || strings.Contains(body, "victim") {
		t.Fatalf("zzz with victim's key: %d %s", code, body)
	}
	ctlPub, err := l.c.identity.ControllerKey().PublicKey()
	if err != nil {
		t.Fatal(err)
	}
	if code, body := l.joinWithKey(t, js, "ctl", ctlPub); code != http.StatusConflict || !strings.Contains(body, "the controller's own") {
		t.Fatalf("the controller's key: %d %s", code, body)
	}
	if code, body := l.joinWithKey(t, js, "bad", "U"+strings.Repeat("<", 55)); code != http.StatusBadRequest || !strings.Contains(body, "public_key") {
		t.Fatalf("a key that is no nkey: %d %s", code, body)
	}
	if used := l.tokenUsed(t, js.TokenID); used != 1 {
		t.Fatalf("the token made %d enrolments, want 1", used)
	}
	for _, id := range []string{"zzz", "ctl", "bad"} {
		if _, err := l.c.store.Identity(id); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s has an identity: %v", id, err)
		}
	}
	publishes(t, l.c, nc, "victim")
	if !l.c.nc.IsConnected() {
		t.Fatal("the controller's connection is down")
	}
}

// A revoked identity stays revoked: a join for its id with its old key is
// refused, by a plain token and a re-enrolling one alike, and so is its
// key under another id; the key stays locked out. Only a re-enrolling
// token with a new key brings the id back, and the old key stays refused
// after that too.
func TestJoinKeepsARevokedIdentityOut(t *testing.T) {
	l := startJoinLab(t)
	plain := l.create(t, api.JoinTokenRequest{Uses: 10})
	reenrol := l.create(t, api.JoinTokenRequest{Uses: 10, Reenrol: true})
	old := newUserKey(t)
	if code, body := l.join(t, plain, "rv", old); code != http.StatusCreated {
		t.Fatalf("join: %d %s", code, body)
	}
	if err := l.c.RevokeAgent(waitCtx(t), "rv"); err != nil {
		t.Fatal(err)
	}
	for name, js := range map[string]protocol.JoinString{"plain": plain, "re-enrolling": reenrol} {
		if code, body := l.join(t, js, "rv", old); code != http.StatusForbidden || !strings.Contains(body, "agent id rv was revoked at") {
			t.Errorf("the revoked id with its old key by a %s token: %d %s", name, code, body)
		}
		if code, body := l.join(t, js, "other", old); code != http.StatusForbidden || !strings.Contains(body, "the public key was revoked") {
			t.Errorf("the revoked key under another id by a %s token: %d %s", name, code, body)
		}
	}
	if code, body := l.join(t, plain, "rv", newUserKey(t)); code != http.StatusForbidden || !strings.Contains(body, "--reenrol") {
		t.Errorf("the revoked id with a new key by a plain token: %d %s", code, body)
	}
	if _, err := l.connect(t, "rv", old); !errors.Is(err, nats.ErrAuthorization) {
		t.Fatalf("the revoked key signs in: %v", err)
	}
	if ident, err := l.c.store.Identity("rv"); err != nil || ident.Active() {
		t.Fatalf("rv's identity after the refusals: %+v, %v", ident, err)
	}
	if used := l.tokenUsed(t, plain.TokenID) + l.tokenUsed(t, reenrol.TokenID); used != 1 {
		t.Fatalf("the tokens made %d enrolments, want 1", used)
	}

	fresh := newUserKey(t)
	if code, body := l.join(t, reenrol, "rv", fresh); code != http.StatusCreated {
		t.Fatalf("re-enrolling rv with a new key: %d %s", code, body)
	}
	nc, err := l.connect(t, "rv", fresh)
	if err != nil {
		t.Fatalf("the new key: %v", err)
	}
	nc.Close()
	if _, err := l.connect(t, "rv", old); !errors.Is(err, nats.ErrAuthorization) {
		t.Fatalf("the old key signs in after the re-enrolment: %v", err)
	}
	// Two joins more, not four: an address has ten in a burst.
	for id, js := range map[string]protocol.JoinString{"rv": reenrol, "other": plain} {
		if code, body := l.join(t, js, id, old); code != http.StatusForbidden || !strings.Contains(body, "the public key was revoked") {
			t.Errorf("the revoked key under %s once rv enrolled again: %d %s", id, code, body)
		}
	}
}

// A store that holds two identities with one key, and one holding the
// controller's own key (as an older release could write), starts: the
// controller keeps its rights and serves HTTP, the agent enrolled first
// keeps the key, /api/health names the conflict, and revoking the
// squatters repairs it without cutting the first agent off.
func TestConflictingIdentitiesAreReportedAndRepairable(t *testing.T) {
	dir := t.TempDir()
	logs := &lockedBuffer{}
	log := zerolog.New(logs).Level(zerolog.WarnLevel)
	first := startControllerLogging(t, Options{DataDir: dir, TLS: TLSOn}, log)
	victim := newUserKey(t)
	if _, err := first.store.PutIdentity("victim", pubOf(t, victim), time.Now().UTC().Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	ctlPub, err := first.identity.ControllerKey().PublicKey()
	if err != nil {
		t.Fatal(err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(filepath.Join(dir, StoreFileName), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for id, pub := range map[string]string{"zzz": pubOf(t, victim), "squat": ctlPub} {
		if _, err := st.PutIdentity(id, pub, time.Now().UTC()); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	c := startControllerLogging(t, Options{DataDir: dir, TLS: TLSOn}, log)
	l := &joinLab{c: c, hc: httpsClient(t, "", c.TLSFingerprint(), nil), logs: logs}
	problem := func() string {
		code, body := l.do(t, http.MethodGet, "/api/health", nil, true)
		var h api.Health
		if err := json.Unmarshal([]byte(body), &h); err != nil {
			t.Fatalf("health: %d %s", code, body)
		}
		for _, p := range h.Problems {
			if p.Component == ProblemIdentities {
				return p.Error
			}
		}
		return ""
	}
	p := problem()
	for _, want := range []string{"agent squat holds the controller's own public key", "agents victim, zzz hold one public key: only victim"} {
		if !strings.Contains(p, want) {
			t.Errorf("health's identities problem %q lacks %q", p, want)
		}
	}
	// The controller kept its rights: its streams answer and a sweep is
	// stored and published.
	if err := c.streams.Ensure(waitCtx(t)); err != nil {
		t.Fatalf("the controller's streams: %v", err)
	}
	nc, err := l.connect(t, "victim", victim)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	publishes(t, c, nc, "victim")

	ctlClosed := make(chan struct{}, 1)
	c.nc.SetDisconnectErrHandler(func(*nats.Conn, error) {
		select {
		case ctlClosed <- struct{}{}:
		default:
		}
	})
	for _, id := range []string{"zzz", "squat"} {
		if code, body := l.do(t, http.MethodDelete, "/api/agents/"+id+"/credentials", nil, true); code != http.StatusOK {
			t.Fatalf("revoke %s: %d %s", id, code, body)
		}
	}
	if p := problem(); p != "" {
		t.Errorf("after the revokes, health still says %q", p)
	}
	if nc.Status() != nats.CONNECTED {
		t.Fatalf("revoking the squatter closed victim's connection: %v", nc.Status())
	}
	publishes(t, c, nc, "victim")
	select {
	case <-ctlClosed:
		t.Fatal("revoking the agent that held the controller's key closed the controller's own connection")
	default:
	}
}
