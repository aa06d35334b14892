package controller

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
	"github.com/rs/zerolog"

	"github.com/vlmfleet/vlmfleet/controller/access"
	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/controller/store"
	"github.com/vlmfleet/vlmfleet/internal/testutil"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// lockedBuffer collects a controller's log lines for the test to read.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// joinLab is a controller with TLS on, whose every log line (debug
// included) is kept, and an HTTPS client that pins its CA.
type joinLab struct {
	c    *Controller
	hc   *http.Client
	logs *lockedBuffer
}

func startJoinLab(t *testing.T) *joinLab {
	t.Helper()
	logs := &lockedBuffer{}
	c := startControllerLogging(t, Options{DataDir: t.TempDir(), TLS: TLSOn},
		zerolog.New(io.MultiWriter(logs, zerolog.NewTestWriter(t))).Level(zerolog.DebugLevel))
	return &joinLab{c: c, hc: httpsClient(t, "", c.TLSFingerprint(), nil), logs: logs}
}

// do sends a JSON body, with the API token when withToken, and returns
// the status and the answer.
func (l *joinLab) do(t *testing.T, method, path string, body any, withToken bool) (int, string) {
	t.Helper()
	data, _ := json.Marshal(body)
	if s, ok := body.(string); ok {
		data = []byte(s)
	}
	req := testutil.NewRequest(t, method, l.c.HTTPURL()+path, string(data))
	req.Header.Set("Content-Type", "application/json")
	if withToken {
		req.Header.Set("Authorization", "Bearer "+l.c.APIToken())
	}
	resp, err := l.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func (l *joinLab) create(t *testing.T, req api.JoinTokenRequest) protocol.JoinString {
	t.Helper()
	code, body := l.do(t, http.MethodPost, "/api/join-tokens", req, true)
	var created api.JoinTokenCreated
	if code != http.StatusCreated || json.Unmarshal([]byte(body), &created) != nil {
		t.Fatalf("create a join token: %d %s", code, body)
	}
	js, err := protocol.ParseJoinString(created.Join)
	if err != nil || js.CAPin != l.c.TLSFingerprint() || js.TokenID != created.ID {
		t.Fatalf("join string %q: %+v, %v", created.Join, js, err)
	}
	return js
}

func newUserKey(t *testing.T) nkeys.KeyPair {
	t.Helper()
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	return kp
}

func pubOf(t *testing.T, kp nkeys.KeyPair) string {
	pub, err := kp.PublicKey()
	if err != nil {
		t.Fatal(err)
	}
	return pub
}

// join posts a join for id with kp's public key, without the API token.
func (l *joinLab) join(t *testing.T, js protocol.JoinString, id string, kp nkeys.KeyPair) (int, string) {
	t.Helper()
	return l.do(t, http.MethodPost, "/api/join", protocol.JoinRequest{TokenID: js.TokenID, Secret: js.Secret, AgentID: id, PublicKey: pubOf(t, kp)}, false)
}

// connect signs in to NATS as id with kp, pinning the controller's CA.
func (l *joinLab) connect(t *testing.T, id string, kp nkeys.KeyPair) (*nats.Conn, error) {
	pub := pubOf(t, kp)
	return nats.Connect(l.c.NATSURL(), nats.Nkey(pub, kp.Sign), nats.CustomInboxPrefix(protocol.AgentInboxPrefix(id)),
		nats.Secure(clientTLS(t, "", l.c.TLSFingerprint(), nil)), nats.MaxReconnects(0))
}

// A join token enrols devices by their own public keys, as often as it
// allows and no more; an id enrolled under another key is refused unless
// the token allows re-enrolment, whose join closes the old key's
// connections; the token's labels apply to the agent; nothing logs the
// secret.
func TestJoinEnrolsUpToItsUses(t *testing.T) {
	l := startJoinLab(t)
	if code, _ := l.do(t, http.MethodPost, "/api/join-tokens", api.JoinTokenRequest{}, false); code != http.StatusUnauthorized {
		t.Fatalf("create without the API token: %d, want 401", code)
	}
	js := l.create(t, api.JoinTokenRequest{Uses: 2, Labels: map[string]string{"site": "lab1"}})

	k1, k2, k3 := newUserKey(t), newUserKey(t), newUserKey(t)
	code, body := l.join(t, js, "orin1", k1)
	var ans protocol.JoinAnswer
	if code != http.StatusCreated || json.Unmarshal([]byte(body), &ans) != nil {
		t.Fatalf("join: %d %s", code, body)
	}
	if ans.NATSURL != l.c.NATSURL() || ans.CAFingerprint != l.c.TLSFingerprint() || ans.Labels["site"] != "lab1" || strings.Contains(body, "seed") {
		t.Fatalf("answer %+v", ans)
	}
	nc, err := l.connect(t, "orin1", k1)
	if err != nil {
		t.Fatalf("the joined key does not sign in: %v", err)
	}
	closed := make(chan struct{})
	nc.SetClosedHandler(func(*nats.Conn) { close(closed) })

	if code, body := l.join(t, js, "orin1", k2); code != http.StatusConflict || !strings.Contains(body, "already enrolled") || !strings.Contains(body, "--reenrol") {
		t.Fatalf("another key for orin1 without --reenrol: %d %s", code, body)
	}
	if code, body := l.join(t, js, "orin2", k2); code != http.StatusCreated {
		t.Fatalf("second join: %d %s", code, body)
	}
	if code, body := l.join(t, js, "orin3", k3); code != http.StatusForbidden || !strings.Contains(body, "used up (2 of 2") {
		t.Fatalf("third join: %d %s", code, body)
	}
	if _, err := l.connect(t, "orin3", k3); err == nil {
		t.Fatal("the refused key signs in")
	}

	// Re-enrolment replaces orin1's key and ends its connection.
	re := l.create(t, api.JoinTokenRequest{Reenrol: true})
	if code, body := l.join(t, re, "orin1", k3); code != http.StatusCreated {
		t.Fatalf("re-enrol: %d %s", code, body)
	}
	select {
	case <-closed:
	case <-time.After(waitLimit):
		t.Fatal("the replaced key's connection stays open")
	}

	// The list shows uses and enrolments, never the secret.
	code, body = l.do(t, http.MethodGet, "/api/join-tokens", nil, true)
	var list []api.JoinTokenView
	if code != http.StatusOK || json.Unmarshal([]byte(body), &list) != nil || len(list) != 2 {
		t.Fatalf("list: %d %s", code, body)
	}
	for _, v := range list {
		if v.ID == js.TokenID && (v.Used != 2 || v.UsesLeft != 0 || v.State != api.JoinTokenUsedUp || len(v.Enrolments) != 2 ||
			v.Enrolments[0].AgentID != "orin1" || !strings.HasPrefix(v.Enrolments[0].RemoteAddr, "127.0.0.1:")) {
			t.Errorf("listed %+v", v)
		}
	}
	if strings.Contains(body, js.Secret) || strings.Contains(body, "secret") {
		t.Errorf("the list shows a secret: %s", body)
	}

	// The agent's view says how it enrolled and carries the token's labels
	// over its own.
	hello := protocol.AgentHello{Schema: 1, Level: protocol.AgentLevel, AgentID: "orin2", Hostname: "h", Labels: map[string]string{"site": "own", "rack": "3"}}
	if err := l.c.store.PutAgentHello(hello, time.Now()); err != nil {
		t.Fatal(err)
	}
	v, err := l.c.agentView("orin2")
	if err != nil || v.EnrolledByToken != js.TokenID || v.EnrolledAt.IsZero() || v.Labels["site"] != "lab1" || v.Labels["rack"] != "3" {
		t.Fatalf("agent view %+v, %v", v, err)
	}
	if strings.Contains(l.logs.String(), js.Secret) || strings.Contains(l.logs.String(), re.Secret) {
		t.Fatal("the controller logged a join secret")
	}
	if !strings.Contains(l.logs.String(), "join refused") {
		t.Fatal("the refusals were not logged")
	}
}

// Every refusal says which in one line, enrols nothing and uses nothing;
// an unknown token and a wrong secret get the same answer.
func TestJoinRefusals(t *testing.T) {
	l := startJoinLab(t)
	js := l.create(t, api.JoinTokenRequest{Uses: 5})
	k := newUserKey(t)
	wrong := js
	wrong.Secret = strings.Repeat("A", protocol.JoinSecretLen)
	unknown := js
	unknown.TokenID = "000000000000"
	if js.TokenID == unknown.TokenID {
		t.Skip("the token's random id is the one the test takes as unknown")
	}
	c1, b1 := l.join(t, wrong, "d1", k)
	c2, b2 := l.join(t, unknown, "d1", k)
	if c1 != http.StatusUnauthorized || c1 != c2 || b1 != b2 || !strings.Contains(b1, "unknown to this controller or its secret is wrong") {
		t.Fatalf("wrong secret: %d %s; unknown token: %d %s; want the same 401", c1, b1, c2, b2)
	}
	if code, body := l.join(t, js, "bad id!", k); code != http.StatusBadRequest || !strings.Contains(body, "agent id") {
		t.Fatalf("bad id: %d %s", code, body)
	}
	if code, _ := l.do(t, http.MethodPost, "/api/join", strings.Repeat(" ", protocol.MaxJoinRequest+1), false); code != http.StatusRequestEntityTooLarge {
		t.Fatalf("oversized join: %d, want 413", code)
	}

	expired := store.JoinToken{ID: "0000000000ee", SecretSHA256: sha256Hex(js.Secret), CreatedAt: time.Now().Add(-2 * time.Hour),
		ExpiresAt: time.Now().Add(-time.Hour), Uses: 1}
	if err := l.c.store.PutJoinToken(expired); err != nil {
		t.Fatal(err)
	}
	exp := js
	exp.TokenID = expired.ID
	if code, body := l.join(t, exp, "d1", k); code != http.StatusForbidden || !strings.Contains(body, "expired at") {
		t.Fatalf("expired: %d %s", code, body)
	}

	if code, body := l.do(t, http.MethodDelete, "/api/join-tokens/"+js.TokenID, nil, true); code != http.StatusOK || !strings.Contains(body, `"state": "revoked"`) {
		t.Fatalf("revoke: %d %s", code, body)
	}
	if code, body := l.join(t, js, "d1", k); code != http.StatusForbidden || !strings.Contains(body, "was revoked at") {
		t.Fatalf("revoked: %d %s", code, body)
	}
	if code, _ := l.do(t, http.MethodDelete, "/api/join-tokens/0123456789ab", nil, true); code != http.StatusNotFound {
		t.Fatalf("revoke an unknown token: %d, want 404", code)
	}
	if _, err := l.c.store.Identity("d1"); err == nil {
		t.Fatal("a refused join enrolled d1")
	}
	tok, err := l.c.store.JoinToken(js.TokenID)
	if err != nil || tok.Used != 0 {
		t.Fatalf("refused joins used the token: %+v, %v", tok, err)
	}

	// Past the burst, an address is told to wait.
	var last int
	var retry string
	for range access.JoinBurst + 1 {
		req := testutil.NewRequest(t, http.MethodPost, l.c.HTTPURL()+"/api/join", "{}")
		req.Header.Set("Content-Type", "application/json")
		resp, err := l.hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		last, retry = resp.StatusCode, resp.Header.Get("Retry-After")
	}
	if last != http.StatusTooManyRequests || retry == "" {
		t.Fatalf("past the burst: %d (Retry-After %q), want 429", last, retry)
	}
	if strings.Contains(l.logs.String(), js.Secret) {
		t.Fatal("the controller logged the join secret")
	}
}

func sha256Hex(s string) string { return fmt.Sprintf("%x", sha256.Sum256([]byte(s))) }

// A controller whose API has no TLS makes no join tokens: a device could
// not check it.
func TestJoinTokenNeedsTLS(t *testing.T) {
	c := startController(t, t.TempDir())
	code, body := postJSON(t, c.HTTPURL()+"/api/join-tokens", "{}")
	if code != http.StatusConflict || !strings.Contains(body, "need the controller's API over TLS") {
		t.Fatalf("%d %s", code, body)
	}
}
