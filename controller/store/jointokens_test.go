package store

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Devices joining at once cannot use a token more often than it allows:
// the use is counted in the transaction that enrols.
func TestJoinCountsUsesAtomically(t *testing.T) {
	s := openTest(t)
	now := time.Now().UTC()
	if err := s.PutJoinToken(JoinToken{ID: "0123456789ab", SecretSHA256: "00", CreatedAt: now, ExpiresAt: now.Add(time.Hour), Uses: 2}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutJoinToken(JoinToken{ID: "0123456789ab"}); !errors.Is(err, ErrExists) {
		t.Fatalf("a second token with the id: %v, want ErrExists", err)
	}
	errFull := errors.New("used up")
	ok := joinAtOnce(t, s, func(i int) string { return fmt.Sprintf("U%d", i) }, errFull, func(tk JoinToken, _, _ Identity) error {
		if tk.Used >= tk.Uses {
			return errFull
		}
		return nil
	})
	tk, err := s.JoinToken("0123456789ab")
	if ok != 2 || err != nil || tk.Used != 2 || len(tk.Enrolled) != 2 {
		t.Fatalf("%d joins succeeded; token %+v, %v", ok, tk, err)
	}
	idents, err := s.Identities(t.Context())
	if err != nil || len(idents) != 2 || idents[0].Token != "0123456789ab" {
		t.Fatalf("identities %+v, %v", idents, err)
	}
	if _, err := s.Join(Enrolment{AgentID: "d9", TokenID: "ffffffffffff"}, func(JoinToken, Identity, Identity) error { return nil }); !errors.Is(err, ErrNotFound) {
		t.Fatalf("an unknown token: %v, want ErrNotFound", err)
	}
}

// Devices joining at once under other ids with one public key cannot both
// take it: the join's decision sees the identity that holds the key, in
// the transaction that enrols, revoked holders included.
func TestJoinSeesTheKeysHolder(t *testing.T) {
	s := openTest(t)
	now := time.Now().UTC()
	if err := s.PutJoinToken(JoinToken{ID: "0123456789ab", SecretSHA256: "00", CreatedAt: now, ExpiresAt: now.Add(time.Hour), Uses: 100}); err != nil {
		t.Fatal(err)
	}
	errHeld := errors.New("key held")
	refuseHeld := func(_ JoinToken, _, holder Identity) error {
		if holder.AgentID != "" {
			return errHeld
		}
		return nil
	}
	if ok := joinAtOnce(t, s, func(int) string { return "UKEY" }, errHeld, refuseHeld); ok != 1 {
		t.Fatalf("%d joins took one key, want 1", ok)
	}

	// The same id joining again with its own key is not its own holder;
	// a revoked holder is still seen.
	var seen Identity
	see := func(_ JoinToken, _, holder Identity) error { seen = holder; return nil }
	idents, err := s.Identities(t.Context())
	if err != nil || len(idents) != 1 {
		t.Fatalf("identities %+v, %v", idents, err)
	}
	first := idents[0].AgentID
	if _, err := s.Join(Enrolment{AgentID: first, PublicKey: "UKEY", At: now, TokenID: "0123456789ab"}, see); err != nil || seen.AgentID != "" {
		t.Fatalf("the holder joining again: holder %+v, %v", seen, err)
	}
	if _, err := s.RevokeIdentity(first, now); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Join(Enrolment{AgentID: "other", PublicKey: "UKEY", At: now, TokenID: "0123456789ab"}, see); err != nil || seen.AgentID != first || seen.Active() {
		t.Fatalf("after the revoke: holder %+v, %v", seen, err)
	}
}

// joinAtOnce has agents d0 to d7 join with token 0123456789ab at once,
// each with the public key key(i), and returns how many were enrolled;
// a join refused with anything but refusal fails the test.
func joinAtOnce(t *testing.T, s *Store, key func(i int) string, refusal error, decide JoinDecision) int {
	t.Helper()
	var wg sync.WaitGroup
	results := make(chan error, 8)
	for i := range 8 {
		wg.Go(func() {
			_, err := s.Join(Enrolment{AgentID: fmt.Sprintf("d%d", i), PublicKey: key(i), At: time.Now().UTC(), TokenID: "0123456789ab"}, decide)
			results <- err
		})
	}
	wg.Wait()
	close(results)
	ok := 0
	for err := range results {
		switch {
		case err == nil:
			ok++
		case !errors.Is(err, refusal):
			t.Fatal(err)
		}
	}
	return ok
}

// A revoked key stays revoked once its agent id enrols again under a new
// key, which replaces the identity's record: a join with it, under that id
// or another, still sees the identity that held it when it was revoked.
// Its own id's join sees no holder while the revoked record is its own, so
// that the decision can say that the id was revoked.
func TestJoinSeesARevokedKeyAfterItsIdEnrolsAgain(t *testing.T) {
	s := openTest(t)
	now := time.Now().UTC()
	if err := s.PutJoinToken(JoinToken{ID: "0123456789ab", SecretSHA256: "00", CreatedAt: now, ExpiresAt: now.Add(time.Hour), Uses: 100}); err != nil {
		t.Fatal(err)
	}
	join := func(id, pub string) {
		t.Helper()
		if _, err := s.Join(Enrolment{AgentID: id, PublicKey: pub, At: now, TokenID: "0123456789ab"}, func(JoinToken, Identity, Identity) error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
	// holderSeen is the key's holder that a join of id with pub sees; the
	// join is refused, so that nothing changes.
	errLooked := errors.New("looked")
	holderSeen := func(id, pub string) Identity {
		t.Helper()
		var seen Identity
		_, err := s.Join(Enrolment{AgentID: id, PublicKey: pub, At: now, TokenID: "0123456789ab"}, func(_ JoinToken, _, holder Identity) error {
			seen = holder
			return errLooked
		})
		if !errors.Is(err, errLooked) {
			t.Fatal(err)
		}
		return seen
	}
	join("rv", "UOLD")
	if _, err := s.RevokeIdentity("rv", now); err != nil {
		t.Fatal(err)
	}
	if h := holderSeen("rv", "UOLD"); h.AgentID != "" {
		t.Fatalf("rv's join with its revoked key sees holder %+v, want none (its own record)", h)
	}
	join("rv", "UNEW")
	for _, id := range []string{"rv", "other"} {
		if h := holderSeen(id, "UOLD"); h.AgentID != "rv" || h.PublicKey != "UOLD" || h.Active() {
			t.Errorf("%s joining with rv's revoked key once rv enrolled again: holder %+v, want rv, revoked", id, h)
		}
	}

	// agent-creds create replaces a revoked record too.
	join("ac", "UAC")
	if _, err := s.RevokeIdentity("ac", now); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutIdentity("ac", "UFRESH", now); err != nil {
		t.Fatal(err)
	}
	if h := holderSeen("other", "UAC"); h.AgentID != "ac" || h.Active() {
		t.Errorf("a join with ac's revoked key once agent-creds replaced it: holder %+v, want ac, revoked", h)
	}

	// A record revoked by a build that kept no revoked keys is kept as
	// one when a join replaces it.
	err := s.db.Update(func(tx *bolt.Tx) error {
		return putJSON(tx.Bucket(bucketIdentities), "legacy", Identity{AgentID: "legacy", PublicKey: "ULEGACY", CreatedAt: now, RevokedAt: now})
	})
	if err != nil {
		t.Fatal(err)
	}
	join("legacy", "UNEWER")
	if h := holderSeen("other", "ULEGACY"); h.AgentID != "legacy" || h.Active() {
		t.Errorf("a join with a key revoked before the revoked keys were kept: holder %+v, want legacy, revoked", h)
	}
}
