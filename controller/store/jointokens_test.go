package store

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
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
