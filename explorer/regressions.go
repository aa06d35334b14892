package explorer

import (
	"context"
	"fmt"
	"net/url"
	"sync"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// RunLoader gives one run with its per-request records (the controller's
// store); ok is false when there is no such run. A RunSource that is also
// a RunLoader lets the explorer compare runs and flag regressions.
type RunLoader interface {
	LoadRun(ctx context.Context, id string) (r protocol.Run, ok bool, err error)
}

// ComparePage is the page comparing run a (before) with run b (after).
func ComparePage(a, b string) string {
	return "/compare?" + url.Values{"a": {a}, "b": {b}}.Encode()
}

// Replacing is a RunSource that says when a run was replaced under its id
// (the controller's store, when an import reuses a run id:
// store.Store.RunsReplaced). The verdicts kept for pairs of runs are
// forgotten when it moves.
type Replacing interface {
	RunsReplaced() uint64
}

// regressionCache keeps each pair's verdict: rows show completed runs,
// whose records no longer change, so a pair is compared once, unless a
// Replacing source says a run was replaced.
type regressionCache struct {
	mu   sync.Mutex
	seen map[[2]string]*Regression
	// replaced is the source's RunsReplaced when seen was started.
	replaced uint64
}

// forgetIfReplaced empties the cache when a run was replaced since it
// was started.
func (rc *regressionCache) forgetIfReplaced(src any) {
	r, ok := src.(Replacing)
	if !ok {
		return
	}
	n := r.RunsReplaced()
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if n != rc.replaced {
		rc.seen, rc.replaced = nil, n
	}
}

// maxCachedPairs bounds the cache; past it, it starts again empty.
const maxCachedPairs = 4096

// flagRegressions sets Row.Regression on the rows whose latest run is worse
// than the one before. A pair that cannot be loaded is left unflagged and
// its error returned, so that the page still loads.
func (rc *regressionCache) flagRegressions(ctx context.Context, ds *Dataset, load RunLoader) error {
	var firstErr error
	for i := range ds.Rows {
		row := &ds.Rows[i]
		if len(row.OtherRuns) == 0 {
			continue
		}
		key := [2]string{row.OtherRuns[0].ID, row.Run.ID}
		rc.mu.Lock()
		reg, ok := rc.seen[key]
		rc.mu.Unlock()
		if !ok {
			var err error
			reg, err = regression(ctx, load, key[0], key[1])
			if err != nil {
				if firstErr == nil {
					firstErr = err
				}
				continue
			}
			rc.mu.Lock()
			if rc.seen == nil || len(rc.seen) >= maxCachedPairs {
				rc.seen = map[[2]string]*Regression{}
			}
			rc.seen[key] = reg
			rc.mu.Unlock()
		}
		if reg != nil {
			row.Regression = new(Regression)
			*row.Regression = *reg
		}
	}
	return firstErr
}

// regression is the flag of run b against the earlier run a, or nil when
// b is not worse.
func regression(ctx context.Context, load RunLoader, a, b string) (*Regression, error) {
	ra, rb, err := loadPair(ctx, load, a, b)
	if err != nil {
		return nil, err
	}
	c, err := Compare(&ra, &rb)
	if err != nil {
		return nil, err
	}
	if c.Verdict != VerdictWorse {
		return nil, nil
	}
	return &Regression{Than: a, Date: runDate(&ra).UTC(), Worse: c.Worse, Compare: ComparePage(a, b)}, nil
}

// RunNotFoundError names a run the store does not hold.
type RunNotFoundError struct{ ID string }

func (e *RunNotFoundError) Error() string { return fmt.Sprintf("no run %q", e.ID) }

func loadPair(ctx context.Context, load RunLoader, a, b string) (protocol.Run, protocol.Run, error) {
	var runs [2]protocol.Run
	for i, id := range []string{a, b} {
		r, ok, err := load.LoadRun(ctx, id)
		if err != nil {
			return protocol.Run{}, protocol.Run{}, fmt.Errorf("load run %s: %w", id, err)
		}
		if !ok {
			return protocol.Run{}, protocol.Run{}, &RunNotFoundError{ID: id}
		}
		runs[i] = r
	}
	return runs[0], runs[1], nil
}
