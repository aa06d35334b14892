package store

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/controller/received"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// A batch stores what its messages one at a time would, later messages
// seeing earlier ones (a run's combinations, then its final header), and a
// batch delivered again counts once.
func TestApplyResultsStoresAsOneByOneAndOnce(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	r1, r2 := labRun(t, s, "j1", "a1"), labRun(t, s, "j2", "a2")
	final := r1
	final.Status, final.FinishedAt = protocol.RunCompleted, time.Unix(1700000100, 0).UTC()
	batch := []protocol.ResultMessage{
		{Schema: 1, AgentID: "a1", Run: r1, Combination: combo("480p", 1)},
		{Schema: 1, AgentID: "a2", Run: r2, Combination: combo("480p", 1)},
		{Schema: 1, AgentID: "a1", Run: r1, Combination: combo("720p", 2)},
		{Schema: 1, AgentID: "a1", Run: final, Final: true, Expected: 2},
	}
	gen := s.RunsGeneration()
	for range 2 { // the second time: a redelivery of all of it
		if _, err := s.ApplyResults(prepared(t, batch...), time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	if s.RunsGeneration() == gen {
		t.Error("a stored batch did not move the runs generation")
	}
	got, err := s.Run(ctx, r1.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != protocol.RunCompleted || len(got.Combinations) != 2 {
		t.Errorf("run 1: status %s with %d combinations, want completed with 2", got.Status, len(got.Combinations))
	}
	if got, err := s.Run(ctx, r2.ID); err != nil || got.Status != protocol.RunRunning || len(got.Combinations) != 1 {
		t.Errorf("run 2: %v, status %s with %d combinations, want running with 1", err, got.Status, len(got.Combinations))
	}
}

// One refused message is left out of its batch and the others are stored
// in the same transaction; the answer says which was refused and why.
func TestApplyResultsLeavesOutTheRefusedInOneTransaction(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	r1 := labRun(t, s, "j1", "a1")
	stranger := r1
	stranger.AgentID = ""
	gen := s.RunsGeneration()
	refused, err := s.ApplyResults(prepared(t, []protocol.ResultMessage{
		{Schema: 1, AgentID: "a1", Run: r1, Combination: combo("480p", 1)},
		{Schema: 1, AgentID: "a9", Run: stranger, Combination: combo("720p", 1)}, // not a9's job
		{Schema: 1, AgentID: "a1", Run: r1, Combination: combo("480p", 2)},
	}...), time.Now())
	if err != nil {
		t.Fatalf("a batch with one refused message failed as a whole: %v", err)
	}
	if len(refused) != 3 || refused[0] != nil || refused[2] != nil || !Refused(refused[1]) {
		t.Fatalf("refused %v, want only message 1", refused)
	}
	wantReject(t, "the stranger's message", refused[1], "belongs to agent a1")
	if n := s.RunsGeneration() - gen; n != 1 {
		t.Errorf("the batch took %d transactions, want 1", n)
	}
	got, err := s.Run(ctx, r1.ID)
	if err != nil || len(got.Combinations) != 2 {
		t.Errorf("run 1 after the batch: %v, %d combinations, want the 2 not refused", err, len(got.Combinations))
	}
}

// prepared is what the controller makes of the messages it receives:
// each encoded as its agent sends it, decoded with its telemetry series
// and request records kept as they came, and prepared for storing.
func prepared(t *testing.T, ms ...protocol.ResultMessage) []*Result {
	t.Helper()
	out := make([]*Result, len(ms))
	for i, m := range ms {
		data, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		r, err := received.Decode(data, nil)
		if err != nil {
			t.Fatal(err)
		}
		if out[i], err = PrepareResult(r); err != nil {
			t.Fatal(err)
		}
	}
	return out
}
