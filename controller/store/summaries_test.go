package store

import (
	"context"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// One SummarySource reads the runs again after results arrive: a run that
// got a combination shows it (its stored bytes changed), a run that did
// not is not decoded again (the same combinations as the last read).
func TestSummariesReadOnlyWhatChanged(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	a, b := labRun(t, s, "j-a", "a1"), labRun(t, s, "j-b", "a1")
	b.CreatedAt = a.CreatedAt.Add(time.Minute)
	apply := func(r protocol.Run, c *protocol.Combination) {
		t.Helper()
		if err := s.ApplyResult(protocol.ResultMessage{Schema: 1, AgentID: "a1", Run: r, Combination: c}, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	apply(a, combo("480p", 1))
	apply(b, combo("480p", 1))
	src := s.Summaries()
	first, err := src.Runs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(first) != 2 || len(first[0].Combinations) != 1 || len(first[1].Combinations) != 1 {
		t.Fatalf("first read: %+v", first)
	}

	apply(a, combo("720p", 2))
	second, err := src.Runs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(second) != 2 || second[0].ID != a.ID || len(second[0].Combinations) != 2 {
		t.Fatalf("after a new combination of %s: %d runs, %d combinations in the first; want 2 and 2: a stale run", a.ID, len(second), len(second[0].Combinations))
	}
	if &second[1].Combinations[0] != &first[1].Combinations[0] {
		t.Errorf("run %s did not change and was decoded again", b.ID)
	}
	if &second[0].Combinations[0] == &first[0].Combinations[0] {
		t.Errorf("run %s changed and was not decoded again", a.ID)
	}

	// A final message closes a run: its header changes, not its combinations.
	closed := b
	closed.Status, closed.FinishedAt = protocol.RunCompleted, b.CreatedAt.Add(time.Hour)
	if err := s.ApplyResult(protocol.ResultMessage{Schema: 1, AgentID: "a1", Run: closed, Final: true, Expected: 1}, time.Now()); err != nil {
		t.Fatal(err)
	}
	third, err := src.Runs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if third[1].Status != protocol.RunCompleted {
		t.Errorf("after its final message run %s reads %s, want completed", b.ID, third[1].Status)
	}
}
