package explorer

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// replacingRuns is a store whose runs can be replaced under their ids, as
// an import that reuses a run id does, saying so as the store does.
type replacingRuns struct {
	mu            sync.Mutex
	runs          storeRuns
	gen, replaced atomic.Uint64
}

func (s *replacingRuns) Runs(ctx context.Context) ([]protocol.Run, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.runs.Runs(ctx)
}

func (s *replacingRuns) LoadRun(ctx context.Context, id string) (protocol.Run, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.runs.LoadRun(ctx, id)
}

func (s *replacingRuns) RunsGeneration() uint64 { return s.gen.Load() }
func (s *replacingRuns) RunsReplaced() uint64   { return s.replaced.Load() }

func (s *replacingRuns) replace(r protocol.Run) {
	s.mu.Lock()
	for i := range s.runs {
		if s.runs[i].ID == r.ID {
			s.runs[i] = r
		}
	}
	s.mu.Unlock()
	s.replaced.Add(1)
	s.gen.Add(1)
}

// A run imported again under its id with other figures is judged again:
// the marker its first import earned goes once the new one is no worse.
func TestReplacedRunIsJudgedAgain(t *testing.T) {
	src := &replacingRuns{runs: comparedRuns()}
	srv := serve(t, src)
	marked := func() bool {
		var ds Dataset
		if st, body := get(t, srv, "GET", PathData, &ds); st != http.StatusOK {
			t.Fatalf("status %d: %s", st, body)
		}
		for _, row := range ds.Rows {
			if row.Quantization == "Q8_0" {
				return row.Regression != nil
			}
		}
		t.Fatal("no Q8_0 row")
		return false
	}
	if !marked() {
		t.Fatal("the slower third run is not marked")
	}
	third := src.runs[2]
	steadyThird := synthRun("third", 3, 16, keys(3), steady)
	steadyThird.FinishedAt = third.FinishedAt
	src.replace(steadyThird)
	if marked() {
		t.Fatal("the third run, imported again as fast as the second, still carries the marker of its first import")
	}
}
