package store

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/vlmfleet/vlmfleet/protocol"
	bolt "go.etcd.io/bbolt"
)

// SummarySource reads runs for the explorer: each run with its
// combinations, their figures and telemetry summary, never the per-request
// records. It satisfies the explorer's RunSource.
type SummarySource struct{ s *Store }

// Summaries is the explorer's view of the stored runs.
func (s *Store) Summaries() SummarySource { return SummarySource{s: s} }

// Runs lists every run without per-request records, oldest first. The run
// ids are listed in one short transaction and each run is then read in its
// own, so a large database never keeps one read transaction open while all
// of it is decoded (a long reader pins freed pages and stalls the
// writer's remapping as the file grows). A run deleted in between is
// skipped.
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
	out := make([]protocol.Run, 0, len(ids))
	for _, id := range ids {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("store: run summaries: %w", err)
		}
		r, err := src.s.getRun(id, false)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	sortRuns(out)
	return out, nil
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
