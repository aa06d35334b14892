package store

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"
)

// Enrolling again replaces the key; revoking keeps the record, marked, and
// a second revoke finds nothing to revoke. Identities survive a reopen.
func TestIdentities(t *testing.T) {
	path := filepath.Join(t.TempDir(), "vlmfleet.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Unix(1700000000, 0).UTC()
	if _, err := s.PutIdentity("a 1", "UKEY", at); err == nil {
		t.Fatal("an invalid agent id was accepted")
	}
	if _, err := s.PutIdentity("a1", "UOLD", at); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutIdentity("a1", "UNEW", at.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutIdentity("a2", "UTWO", at); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RevokeIdentity("nobody", at); !errors.Is(err, ErrNotFound) {
		t.Fatalf("revoking an agent never enrolled: %v, want ErrNotFound", err)
	}
	rev, err := s.RevokeIdentity("a2", at.Add(time.Minute))
	if err != nil || rev.Active() || !rev.RevokedAt.Equal(at.Add(time.Minute)) {
		t.Fatalf("revoke a2: %+v, %v", rev, err)
	}
	if _, err := s.RevokeIdentity("a2", at.Add(time.Hour)); !errors.Is(err, ErrNotFound) {
		t.Fatalf("revoking twice: %v, want ErrNotFound", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	all, err := s.Identities(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 2 || all[0].AgentID != "a1" || all[0].PublicKey != "UNEW" || !all[0].Active() ||
		all[1].AgentID != "a2" || all[1].Active() {
		t.Fatalf("identities after reopen: %+v", all)
	}
	if one, err := s.Identity("a1"); err != nil || one.PublicKey != "UNEW" || !one.CreatedAt.Equal(at.Add(time.Second)) {
		t.Fatalf("identity a1: %+v, %v", one, err)
	}
	if _, err := s.Identity("nobody"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("identity of nobody: %v", err)
	}
}
