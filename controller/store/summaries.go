package store

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"sort"
	"sync"

	"github.com/vlmfleet/vlmfleet/protocol"
	bolt "go.etcd.io/bbolt"
)

// SummarySource reads runs for the explorer: each run with its
// combinations, their figures and telemetry summary, never the per-request
// records or the telemetry series. It satisfies the explorer's RunSource.
//
// It remembers the runs it decoded, each under a hash of its stored bytes
// (the run's record and every combination's), so that reading the runs
// again decodes only those that changed: hashing the bytes costs a small
// part of decoding their JSON, which is what a read of every run spends
// its time on (about 1 s of CPU at 28,000 combinations).
type SummarySource struct {
	s    *Store
	memo *runMemo
}

// runMemo is what one SummarySource decoded, by run id.
type runMemo struct {
	mu   sync.Mutex
	seed maphash.Seed
	runs map[string]memoRun
}

type memoRun struct {
	sum uint64
	run protocol.Run
}

// Summaries is the explorer's view of the stored runs. Each SummarySource
// has its own memory of the runs it decoded: keep one for as long as its
// reader lives (the explorer does).
func (s *Store) Summaries() SummarySource {
	return SummarySource{s: s, memo: &runMemo{seed: maphash.MakeSeed()}}
}

// Runs lists every run without per-request records, oldest first. The run
// ids are listed in one short transaction and each run is then read in its
// own, so a large database never keeps one read transaction open while all
// of it is read (a long reader pins freed pages and stalls the writer's
// remapping as the file grows). A run deleted in between is skipped.
//
// A run whose stored bytes are those of the previous call is not decoded
// again: its Combinations are the same slice as that call's, so callers
// read them and never change them.
func (src SummarySource) Runs(ctx context.Context) ([]protocol.Run, error) {
	var ids []string
	err := src.s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketRuns).ForEach(func(k, v []byte) error {
			if v != nil {
				ids = append(ids, string(k))
			}
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("store: run summaries: %w", err)
	}
	m := src.memo
	if m == nil {
		m = &runMemo{seed: maphash.MakeSeed()}
	}
	// One reader at a time: the map is replaced as a whole at the end.
	m.mu.Lock()
	defer m.mu.Unlock()
	next := make(map[string]memoRun, len(ids))
	out := make([]protocol.Run, 0, len(ids))
	for _, id := range ids {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("store: run summaries: %w", err)
		}
		mr, err := src.readRun(m, id)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		next[id] = mr
		out = append(out, mr.run)
	}
	// Runs gone from the store are forgotten with the old map.
	m.runs = next
	sortRuns(out)
	return out, nil
}

// readRun hashes run id's stored bytes and decodes them unless m holds
// the run under the same hash; all in one transaction, so the hash is of
// the bytes decoded.
func (src SummarySource) readRun(m *runMemo, id string) (memoRun, error) {
	var mr memoRun
	err := src.s.db.View(func(tx *bolt.Tx) error {
		hv := tx.Bucket(bucketRuns).Get([]byte(id))
		if hv == nil {
			return ErrNotFound
		}
		var h maphash.Hash
		h.SetSeed(m.seed)
		var n [binary.MaxVarintLen64]byte
		// Lengths first, so that no two different sequences of records
		// hash the same bytes.
		field := func(b []byte) {
			_, _ = h.Write(n[:binary.PutUvarint(n[:], uint64(len(b)))])
			_, _ = h.Write(b)
		}
		field(hv)
		if cb := tx.Bucket(bucketCombos).Bucket([]byte(id)); cb != nil {
			if err := cb.ForEach(func(k, v []byte) error {
				field(k)
				field(v)
				return nil
			}); err != nil {
				return err
			}
		}
		mr.sum = h.Sum64()
		if old, ok := m.runs[id]; ok && old.sum == mr.sum {
			mr.run = old.run
			return nil
		}
		var rec runRecord
		if err := getExisting(tx.Bucket(bucketRuns), id, &rec); err != nil {
			return err
		}
		mr.run = rec.Run
		return loadCombinations(tx, &mr.run, false, false)
	})
	if err != nil && !errors.Is(err, ErrNotFound) {
		return memoRun{}, fmt.Errorf("store: run %s: %w", id, err)
	}
	return mr, err
}

// sortRuns orders runs oldest first, ties by id.
func sortRuns(runs []protocol.Run) {
	sort.SliceStable(runs, func(i, j int) bool {
		if !runs[i].CreatedAt.Equal(runs[j].CreatedAt) {
			return runs[i].CreatedAt.Before(runs[j].CreatedAt)
		}
		return runs[i].ID < runs[j].ID
	})
}

// LoadRun returns one run with its per-request records, for the explorer's
// comparison of two runs; ok is false when there is no run id.
func (src SummarySource) LoadRun(ctx context.Context, id string) (r protocol.Run, ok bool, err error) {
	r, err = src.s.Run(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return protocol.Run{}, false, nil
	}
	return r, err == nil, err
}

// RunsGeneration is the store's (Store.RunsGeneration): the explorer keeps
// its aggregate of Runs until it moves.
func (src SummarySource) RunsGeneration() uint64 { return src.s.RunsGeneration() }

// RunsReplaced is the store's (Store.RunsReplaced): the explorer forgets
// its regression verdicts when it moves.
func (src SummarySource) RunsReplaced() uint64 { return src.s.RunsReplaced() }
