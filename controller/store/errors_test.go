package store

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// boltKeyTooLarge is the error bbolt really returns for a key over its
// 32 KiB limit, wrapped the way the store wraps it.
func boltKeyTooLarge(t *testing.T) error {
	t.Helper()
	db, err := bolt.Open(filepath.Join(t.TempDir(), "k.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists([]byte("b"))
		if err != nil {
			return err
		}
		if err := b.Put([]byte(strings.Repeat("k", 40<<10)), []byte("v")); err != nil {
			return fmt.Errorf("put: %w", err)
		}
		return nil
	})
	if err == nil {
		t.Fatal("bbolt accepted a 40 KiB key")
	}
	return fmt.Errorf("store: result for run r1: %w", err)
}

func TestPermanentTellsRefusalsFromPassingFailures(t *testing.T) {
	closed := openTest(t)
	if err := closed.Close(); err != nil {
		t.Fatal(err)
	}
	errClosed := closed.Reject(Rejection{Subject: "s", StreamSeq: 1, Reason: "r"}, []byte("x"))
	if errClosed == nil {
		t.Fatal("a closed store accepted a write")
	}
	cases := []struct {
		name string
		err  error
		want bool
	}{
		{"rejected", fmt.Errorf("ingest: %w", Rejectf("run %s belongs to agent %s", "r1", "a2")), true},
		{"key too large", boltKeyTooLarge(t), true},
		{"closed database", errClosed, false},
		{"disk full", errors.New("write: no space left on device"), false},
		{"context ended", context.Canceled, false},
		{"nil", nil, false},
	}
	for _, tc := range cases {
		if got := Permanent(tc.err); got != tc.want {
			t.Errorf("%s: Permanent(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}
