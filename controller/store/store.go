// Package store keeps the controller's state in one bbolt file: the agents
// that announced themselves, sweeps and their jobs, the runs with their
// measured combinations and per-request records, and the messages that were
// rejected. Every write that a redelivered message may repeat is keyed by
// that message's identity, so repeating it stores the same bytes once.
package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// SchemaVersion is the layout of the database file. A file written by a
// newer layout is refused rather than misread; an older one is read as it
// is and marked with this version at open, since what this build writes
// an older one would misread. Schema 2 compresses the records of
// combinations and requests (records.go).
const SchemaVersion = 2

// Bucket names. combos and requests hold one nested bucket per run id, keyed
// by the combination's ComboKey.String(), so a run's parts are found without
// parsing composite keys.
var (
	bucketAgents   = []byte("agents")
	bucketSweeps   = []byte("sweeps")
	bucketJobs     = []byte("jobs")
	bucketRuns     = []byte("runs")
	bucketCombos   = []byte("combos")
	bucketRequests = []byte("requests")
	bucketRejected = []byte("rejected")
	bucketMeta     = []byte("meta")
	// identities: agent id → Identity (identities.go).
	bucketIdentities = []byte("identities")
	// join_tokens: token id → JoinToken (jointokens.go).
	bucketJoinTokens = []byte("join_tokens")
	// revoked_keys: public key → revokedKey (identities.go).
	bucketRevokedKeys = []byte("revoked_keys")
)

func allBuckets() [][]byte {
	return [][]byte{bucketAgents, bucketSweeps, bucketJobs, bucketRuns, bucketCombos, bucketRequests, bucketRejected, bucketMeta, bucketIdentities, bucketJoinTokens, bucketRevokedKeys}
}

// ErrNotFound is returned when a record with the given id does not exist.
var ErrNotFound = errors.New("not found")

// RejectError says that a message is well formed but must not be stored
// (for example an agent reporting on another agent's job). The caller
// records it and does not retry.
type RejectError struct{ Reason string }

func (e *RejectError) Error() string { return e.Reason }

// Rejectf returns a *RejectError with a formatted reason.
func Rejectf(format string, args ...any) error {
	return &RejectError{Reason: fmt.Sprintf(format, args...)}
}

// Permanent reports whether writing the same message again would fail the
// same way: a *RejectError, or bbolt refusing the key or value itself. A
// caller that retries other errors (a full disk, a closing database) must
// not retry these. It is here, not with the caller, so that only the store
// knows it keeps its data in bbolt.
func Permanent(err error) bool {
	var rej *RejectError
	if errors.As(err, &rej) {
		return true
	}
	for _, p := range []error{bolterrors.ErrKeyTooLarge, bolterrors.ErrValueTooLarge, bolterrors.ErrKeyRequired, bolterrors.ErrBucketNameRequired, bolterrors.ErrIncompatibleValue} {
		if errors.Is(err, p) {
			return true
		}
	}
	return false
}

// Store is the controller's database.
type Store struct {
	db      *bolt.DB
	path    string
	pidPath string
	// runsGen is RunsGeneration's counter, runsReplaced RunsReplaced's.
	runsGen, runsReplaced atomic.Uint64
	// view holds the agents and the jobs' tallies in memory.
	view fleetView
}

// Options tune Open.
type Options struct {
	// LockTimeout is how long Open waits for another process to release the
	// file (default 2 s).
	LockTimeout time.Duration
	// PriorState is what shows, outside the file, that the store held data
	// (the caller's words, e.g. "nats/ holds JetStream data"): an empty file
	// is then refused as lost, where otherwise it is made a new database.
	PriorState string
}

// Open opens or creates the database at path. If another process holds the
// file, Open fails after the lock timeout with an error naming that process.
// A file that lost its contents or whose pages do not read is refused with
// a *DamagedError, which says how to restore a backup; a file others may
// read is refused with the chmod that fixes it.
func Open(path string, opt Options) (*Store, error) {
	if opt.LockTimeout <= 0 {
		opt.LockTimeout = 2 * time.Second
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("store: create directory for %s: %w", path, err)
	}
	pidPath := path + ".pid"
	if err := preflight(path, pidPath, opt); err != nil {
		return nil, err
	}
	db, err := openWritable(path, pidPath, opt)
	if err != nil {
		return nil, err
	}
	s := &Store{db: db, path: path, pidPath: pidPath}
	if err := s.init(); err != nil {
		_ = db.Close()
		return nil, err
	}
	if err := s.loadView(); err != nil {
		_ = db.Close()
		return nil, err
	}
	if err := writePid(pidPath); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("store: %w", err)
	}
	return s, nil
}

func (s *Store) init() error {
	return s.db.Update(func(tx *bolt.Tx) error {
		for _, name := range allBuckets() {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return fmt.Errorf("store: create bucket %s: %w", name, err)
			}
		}
		if err := ensureSweepIndex(tx); err != nil {
			return err
		}
		meta := tx.Bucket(bucketMeta)
		v := meta.Get([]byte("schema"))
		if v == nil {
			return meta.Put([]byte("schema"), []byte(strconv.Itoa(SchemaVersion)))
		}
		n, err := strconv.Atoi(string(v))
		if err != nil {
			return fmt.Errorf("store: %s: unreadable schema version %q", s.path, v)
		}
		if n > SchemaVersion {
			return fmt.Errorf("store: %s has schema %d, this build reads up to %d; use a newer vlmfleet", s.path, n, SchemaVersion)
		}
		if n < SchemaVersion {
			return meta.Put([]byte("schema"), []byte(strconv.Itoa(SchemaVersion)))
		}
		return nil
	})
}

// Path is the database file.
func (s *Store) Path() string { return s.path }

// Close releases the file.
func (s *Store) Close() error {
	err := s.db.Close()
	_ = os.Remove(s.pidPath)
	if err != nil {
		return fmt.Errorf("store: close %s: %w", s.path, err)
	}
	return nil
}

func putJSON(b *bolt.Bucket, key string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s: %w", key, err)
	}
	if err := b.Put([]byte(key), data); err != nil {
		return fmt.Errorf("put %s: %w", key, err)
	}
	return nil
}

func getJSON(b *bolt.Bucket, key string, v any) (bool, error) {
	data := b.Get([]byte(key))
	if data == nil {
		return false, nil
	}
	if err := json.Unmarshal(data, v); err != nil {
		return true, fmt.Errorf("decode %s: %w", key, err)
	}
	return true, nil
}

// getExisting is getJSON for a record that must be there: ErrNotFound
// when it is not.
func getExisting(b *bolt.Bucket, key string, v any) error {
	ok, err := getJSON(b, key, v)
	if err == nil && !ok {
		err = ErrNotFound
	}
	return err
}

// getOne reads the record id of bucket in a read transaction, or returns
// ErrNotFound; errors name what the record is.
func getOne[T any](s *Store, bucket []byte, what, id string) (T, error) {
	var v T
	err := s.db.View(func(tx *bolt.Tx) error {
		return getExisting(tx.Bucket(bucket), id, &v)
	})
	if err != nil {
		var zero T
		return zero, fmt.Errorf("store: %s %s: %w", what, id, err)
	}
	return v, nil
}

// getAll reads, in one read transaction, every record of bucket that keep
// accepts (every record when keep is nil), in key order; errors name what
// the records are.
func getAll[T any](ctx context.Context, s *Store, bucket []byte, what string, keep func(*T) bool) ([]T, error) {
	var out []T
	err := s.db.View(func(tx *bolt.Tx) error {
		return forEachJSON(ctx, tx.Bucket(bucket), func(_ string, v *T) error {
			if keep == nil || keep(v) {
				out = append(out, *v)
			}
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("store: %s: %w", what, err)
	}
	return out, nil
}

// forEachJSON decodes every value of b into a fresh T and calls fn. The
// context is checked between records so a long listing can be abandoned.
func forEachJSON[T any](ctx context.Context, b *bolt.Bucket, fn func(key string, v *T) error) error {
	c := b.Cursor()
	for k, data := c.First(); k != nil; k, data = c.Next() {
		if data == nil {
			continue // nested bucket
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		var v T
		if err := json.Unmarshal(data, &v); err != nil {
			return fmt.Errorf("decode %s: %w", k, err)
		}
		if err := fn(string(k), &v); err != nil {
			return err
		}
	}
	return nil
}
