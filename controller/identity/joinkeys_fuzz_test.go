package identity

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"maps"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nkeys"

	"github.com/vlmfleet/vlmfleet/controller/store"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// joinFuzzSecret is the secret of both tokens of FuzzJoinKeepsKeysBound.
var joinFuzzSecret = strings.Repeat("s", protocol.JoinSecretLen)

// joinFuzzLab is a store with a plain and a re-enrolling token, three
// agent ids, four device keys and the controller's own, and what the
// store should hold, kept from the rules the joins are held to rather
// than from the code that applies them.
type joinFuzzLab struct {
	st          *store.Store
	ids         []string
	keys        []string // the devices' keys, then the controller's
	controller  string
	revokedKeys map[string]bool
}

func newJoinFuzzLab(t *testing.T) *joinFuzzLab {
	l := &joinFuzzLab{ids: []string{"a", "b", "c"}, revokedKeys: map[string]bool{}}
	for range 5 {
		kp, err := nkeys.CreateUser()
		if err != nil {
			t.Fatal(err)
		}
		pub, err := kp.PublicKey()
		if err != nil {
			t.Fatal(err)
		}
		l.keys = append(l.keys, pub)
	}
	l.controller = l.keys[4]
	st, err := store.Open(filepath.Join(t.TempDir(), "vlmfleet.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	l.st = st
	sum := sha256.Sum256([]byte(joinFuzzSecret))
	now := time.Now().UTC()
	for _, tk := range []store.JoinToken{
		{ID: "000000000000", Uses: 1000},
		{ID: "111111111111", Uses: 1000, Reenrol: true},
	} {
		tk.SecretSHA256, tk.CreatedAt, tk.ExpiresAt = hex.EncodeToString(sum[:]), now, now.Add(time.Hour)
		if err := st.PutJoinToken(tk); err != nil {
			t.Fatal(err)
		}
	}
	return l
}

// identities is the store's identities by agent id.
func (l *joinFuzzLab) identities(t *testing.T) map[string]store.Identity {
	idents, err := l.st.Identities(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]store.Identity{}
	for _, id := range idents {
		m[id.AgentID] = id
	}
	return m
}

// mayJoin is the rule a join is held to: a key is bound to one identity
// (never another id's, revoked or not, nor the controller's), a revoked
// key never enrols again, an enrolled id changes its key only by a
// re-enrolling token, and a revoked id comes back only by a re-enrolling
// token with a new key.
func (l *joinFuzzLab) mayJoin(before map[string]store.Identity, id, key string, reenrol bool) bool {
	if key == l.controller || l.revokedKeys[key] {
		return false
	}
	for other, ident := range before {
		if other != id && ident.PublicKey == key {
			return false
		}
	}
	prev, had := before[id]
	switch {
	case !had:
		return true
	case !prev.Active():
		return reenrol && prev.PublicKey != key
	}
	return prev.PublicKey == key || reenrol
}

// join posts a join as the controller takes it: the request decoded, then
// decided in the store's transaction by admitJoin.
func (l *joinFuzzLab) join(t *testing.T, id, key string, reenrol bool) error {
	tokenID := "000000000000"
	if reenrol {
		tokenID = "111111111111"
	}
	body, err := json.Marshal(protocol.JoinRequest{TokenID: tokenID, Secret: joinFuzzSecret, AgentID: id, PublicKey: key})
	if err != nil {
		t.Fatal(err)
	}
	req, err := protocol.DecodeJoinRequest(body)
	if err != nil {
		t.Fatalf("the join of %s: %v", id, err)
	}
	now := time.Now().UTC()
	e := store.Enrolment{AgentID: req.AgentID, PublicKey: req.PublicKey, At: now, TokenID: req.TokenID}
	_, err = l.st.Join(e, func(tk store.JoinToken, prev, holder store.Identity) error {
		return admitJoin(tk, joinClaim{prev: prev, keyHolder: holder, controllerKey: l.controller}, req, now)
	})
	return err
}

// checkBound fails where two active identities share a key, or one holds
// the controller's key or a revoked one.
func (l *joinFuzzLab) checkBound(t *testing.T, idents map[string]store.Identity) {
	holders := map[string]string{}
	for id, ident := range idents {
		if !ident.Active() {
			continue
		}
		if ident.PublicKey == l.controller || l.revokedKeys[ident.PublicKey] {
			t.Fatalf("active %s holds the controller's key or a revoked one: %+v", id, ident)
		}
		if other, held := holders[ident.PublicKey]; held {
			t.Fatalf("%s and %s hold one key", other, id)
		}
		holders[ident.PublicKey] = id
	}
}

// Any order of joins, by a plain or a re-enrolling token, and revocations
// among three agent ids and four keys (and the controller's) leaves each
// key with one active identity at most, never the controller's or a
// revoked one: each join is admitted exactly when the rules allow it, and
// a refused one changes nothing.
func FuzzJoinKeepsKeysBound(f *testing.F) {
	// Each byte is a step: bits 0-1 the agent id (3 is a), 2-4 the key (5
	// to 7 are the first ones), 5 the token (re-enrolling when set), 6-7 a
	// revocation of the id when both are set, else a join.
	f.Add([]byte{0x00, 0x01, 0x05}) // a and b with key 0, b with key 1
	f.Add([]byte{0x00, 0xc0, 0x00, 0x20, 0x24})
	f.Add([]byte{0x10, 0x11, 0x30})             // the controller's key
	f.Add([]byte{0x00, 0x24, 0x00, 0xc0, 0x28}) // a re-enrolled, revoked, back with a new key
	f.Fuzz(func(t *testing.T, steps []byte) {
		if len(steps) > 16 {
			steps = steps[:16]
		}
		l := newJoinFuzzLab(t)
		for _, s := range steps {
			id := l.ids[int(s&3)%len(l.ids)]
			before := l.identities(t)
			if s>>6 == 3 {
				ident, err := l.st.RevokeIdentity(id, time.Now().UTC())
				switch {
				case err == nil:
					l.revokedKeys[ident.PublicKey] = true
				case !errors.Is(err, store.ErrNotFound): // none, or revoked already
					t.Fatalf("revoke %s: %v", id, err)
				}
				l.checkBound(t, l.identities(t))
				continue
			}
			k, reenrol := int(s>>2&7)%len(l.keys), s&0x20 != 0
			key := l.keys[k]
			want := l.mayJoin(before, id, key, reenrol)
			err := l.join(t, id, key, reenrol)
			var refused *JoinRefusedError
			if err != nil && !errors.As(err, &refused) {
				t.Fatalf("join %s: %v", id, err)
			}
			after := l.identities(t)
			switch {
			case want && err != nil:
				t.Fatalf("join %s with key %d (re-enrolling %v) refused: %v", id, k, reenrol, err)
			case !want && err == nil:
				t.Fatalf("join %s with key %d (re-enrolling %v) admitted; before it: %+v", id, k, reenrol, before)
			case err != nil && !maps.EqualFunc(before, after, func(x, y store.Identity) bool { return reflect.DeepEqual(x, y) }):
				t.Fatalf("a refused join changed the identities: %+v, then %+v", before, after)
			}
			l.checkBound(t, after)
		}
	})
}
