package store

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/protocol"
	bolt "go.etcd.io/bbolt"
)

func TestOlderHelloDoesNotReplaceNewer(t *testing.T) {
	s := openTest(t)
	restart := time.Unix(1700000100, 0).UTC()
	newer := protocol.AgentHello{Schema: 1, Level: protocol.AgentLevel, AgentID: "a1", Hostname: "after-restart", StartedAt: restart}
	older := protocol.AgentHello{Schema: 1, Level: protocol.AgentLevel, AgentID: "a1", Hostname: "before-restart", StartedAt: restart.Add(-time.Hour)}
	t0 := time.Unix(1700000200, 0).UTC()
	if err := s.PutAgentHello(newer, t0); err != nil {
		t.Fatal(err)
	}
	if err := s.PutAgentHello(older, t0.Add(time.Second)); err != nil { // late redelivery
		t.Fatal(err)
	}
	a, err := s.Agent("a1")
	if err != nil {
		t.Fatal(err)
	}
	if a.Hello.Hostname != "after-restart" || !a.HelloAt.Equal(t0) {
		t.Errorf("kept hello %q received %s, want the newer one received %s", a.Hello.Hostname, a.HelloAt, t0)
	}
	if !a.LastSeen.Equal(t0.Add(time.Second)) {
		t.Errorf("last seen %s, want the older hello's arrival %s", a.LastSeen, t0.Add(time.Second))
	}
	// A newer start still replaces it.
	newest := newer
	newest.Hostname, newest.StartedAt = "second-restart", t0.Add(time.Second)
	if err := s.PutAgentHello(newest, t0.Add(2*time.Second)); err != nil {
		t.Fatal(err)
	}
	if a, _ := s.Agent("a1"); a.Hello.Hostname != "second-restart" {
		t.Errorf("kept %q, want the newest hello", a.Hello.Hostname)
	}
}

func TestLateProgressKeepsFinalHeader(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	running := labRun(t, s, "j1", "a1")
	failed := running
	failed.Status, failed.Error = protocol.RunFailed, "engine exited"
	failed.Engine.LogTail = "CUDA out of memory"
	failed.FinishedAt = time.Unix(1700000300, 0).UTC()
	msgs := []protocol.ResultMessage{
		{Schema: 1, AgentID: "a1", Run: running, Combination: combo("480p", 1)},
		{Schema: 1, AgentID: "a1", Run: failed, Final: true, Expected: 2},
		{Schema: 1, AgentID: "a1", Run: running, Combination: combo("480p", 2)}, // late
	}
	for _, m := range msgs {
		if err := s.ApplyResult(m, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	r, err := s.RunSummary(ctx, running.ID)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != protocol.RunFailed || r.Error != "engine exited" || r.Engine.LogTail != "CUDA out of memory" || !r.FinishedAt.Equal(failed.FinishedAt) {
		t.Errorf("header rolled back: status %s error %q log tail %q finished %s", r.Status, r.Error, r.Engine.LogTail, r.FinishedAt)
	}
	if len(r.Combinations) != 2 {
		t.Errorf("%d combinations, want 2 (the late one is still stored)", len(r.Combinations))
	}
}

func TestSummariesCarryFiguresNotRequests(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	gpu := 87.5
	older, newer := labRun(t, s, "j-old", "a1"), labRun(t, s, "j-new", "a1")
	newer.CreatedAt = older.CreatedAt.Add(time.Minute)
	c := combo("480p", 1)
	c.Telemetry = &protocol.TelemetrySummary{Samples: 4, Source: "tegrastats", GPUUtilMean: &gpu}
	for _, m := range []protocol.ResultMessage{
		{Schema: 1, AgentID: "a1", Run: newer, Combination: combo("720p", 1)},
		{Schema: 1, AgentID: "a1", Run: older, Combination: c},
	} {
		if err := s.ApplyResult(m, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	runs, err := s.Summaries().Runs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 2 || runs[0].ID != older.ID || runs[1].ID != newer.ID {
		t.Fatalf("runs %+v, want %s then %s", runs, older.ID, newer.ID)
	}
	got := runs[0].Combinations
	if len(got) != 1 || got[0].Completed != 1 || got[0].TTFT.Mean != 1.3 || got[0].Telemetry == nil || *got[0].Telemetry.GPUUtilMean != gpu {
		t.Fatalf("combination lost its figures or telemetry: %+v", got)
	}
	for _, r := range runs {
		for _, c := range r.Combinations {
			if c.Requests != nil {
				t.Errorf("run %s %s carries %d request records", r.ID, c.ComboKey, len(c.Requests))
			}
		}
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.Summaries().Runs(cancelled); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled listing: %v, want context.Canceled", err)
	}
}

func TestStoreRefusesIDsThatCannotBeKeys(t *testing.T) {
	s := openTest(t)
	long := strings.Repeat("x", 40<<10) // over bbolt's 32 KiB key limit
	var rej *RejectError
	short := func(err error) string { // the id is 40 KiB
		if err == nil {
			return "<nil>"
		}
		return err.Error()[:min(len(err.Error()), 120)]
	}
	if err := s.PutAgentHello(protocol.AgentHello{Schema: 1, Level: protocol.AgentLevel, AgentID: long}, time.Now()); !errors.As(err, &rej) {
		t.Errorf("hello: %s, want a RejectError", short(err))
	}
	if _, _, err := s.ApplyJobState(protocol.JobStateChange{Schema: 1, JobID: long, AgentID: "a1", State: protocol.JobRunning, Attempt: 1}, time.Now()); !errors.As(err, &rej) {
		t.Errorf("job state: %s, want a RejectError", short(err))
	}
	run := testRun(long, "a1")
	if err := s.ApplyResult(protocol.ResultMessage{Schema: 1, AgentID: "a1", Run: run, Combination: combo("480p", 1)}, time.Now()); !errors.As(err, &rej) {
		t.Errorf("result: %s, want a RejectError", short(err))
	}
}

// fillRejected puts n rejections in one transaction, as n Reject calls would.
func fillRejected(tb testing.TB, s *Store, n int) {
	tb.Helper()
	err := s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketRejected)
		for range n {
			seq, err := b.NextSequence()
			if err != nil {
				return err
			}
			if err := b.Put(seqKey(seq), []byte(`{"seq":1,"reason":"old"}`)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
}

func TestRejectedStaysBounded(t *testing.T) {
	s := openTest(t)
	fillRejected(t, s, MaxRejected-1)
	for range 3 {
		if err := s.Reject(Rejection{Subject: "vlmfleet.agent.x.result", Reason: "new"}, []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	var n int
	var first uint64
	_ = s.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketRejected)
		n = b.Stats().KeyN
		k, _ := b.Cursor().First()
		first = seqFromKey(k)
		return nil
	})
	if n != MaxRejected || first != 3 {
		t.Errorf("%d entries from seq %d, want %d from seq 3 (the two oldest dropped)", n, first, MaxRejected)
	}
	got, err := s.Rejected(context.Background(), 1)
	if err != nil || len(got) != 1 || got[0].Reason != "new" || got[0].Seq != MaxRejected+2 {
		t.Errorf("newest %+v, %v", got, err)
	}
}

func seqFromKey(k []byte) uint64 {
	var n uint64
	for _, c := range k {
		n = n<<8 | uint64(c)
	}
	return n
}

// BenchmarkRejectFullBucket is one rejection once the bucket is full (the
// common case under a misbehaving agent).
func BenchmarkRejectFullBucket(b *testing.B) {
	s, err := Open(b.TempDir()+"/vlmfleet.db", Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	fillRejected(b, s, MaxRejected)
	b.ResetTimer()
	for b.Loop() {
		if err := s.Reject(Rejection{Subject: "vlmfleet.agent.x.result", Reason: "bad"}, []byte("x")); err != nil {
			b.Fatal(err)
		}
	}
}

func TestFirstFinalDecidesHowARunEnded(t *testing.T) {
	s := openTest(t)
	completed := labRun(t, s, "j2", "a1")
	completed.Status = protocol.RunCompleted
	closedLater := completed
	closedLater.Status, closedLater.Error = protocol.RunFailed, "the agent stopped during this attempt"
	for _, m := range []protocol.ResultMessage{
		{Schema: 1, AgentID: "a1", Run: completed, Final: true, Expected: 0},
		{Schema: 1, AgentID: "a1", Run: closedLater, Final: true},
	} {
		if err := s.ApplyResult(m, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	r, err := s.RunSummary(context.Background(), completed.ID)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != protocol.RunCompleted || r.Error != "" {
		t.Fatalf("a second final rewrote the run: status %s error %q", r.Status, r.Error)
	}
}

// When the controller fails a job (JetStream gave up delivering it), the run
// of its last attempt is closed too: no agent will send its final message.
func TestFailedJobClosesItsRunningRun(t *testing.T) {
	s := openTest(t)
	job := protocol.Job{Schema: 1, ID: "j1", AgentID: "a1", Deployment: "d", Workload: protocol.DefaultWorkload()}
	if err := s.PutJob(JobRecord{Job: job, State: protocol.JobQueued}); err != nil {
		t.Fatal(err)
	}
	run := testRun("j1-a2", "a1")
	run.JobID = "j1"
	if _, _, err := s.ApplyJobState(protocol.JobStateChange{Schema: 1, JobID: "j1", RunID: run.ID, AgentID: "a1", State: protocol.JobRunning, Attempt: 2}, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := s.ApplyResult(protocol.ResultMessage{Schema: 1, AgentID: "a1", Run: run, Combination: combo("480p", 1)}, time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.FailJob(protocol.JobStateChange{Schema: 1, JobID: "j1", AgentID: "a1", Attempt: 2, Error: "delivered 2 times"}, time.Now()); err != nil {
		t.Fatal(err)
	}
	r, err := s.RunSummary(context.Background(), run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != protocol.RunFailed || r.Error != "delivered 2 times" || r.FinishedAt.IsZero() || len(r.Combinations) != 1 {
		t.Fatalf("run after the job failed: status %s error %q finished %s, %d combinations", r.Status, r.Error, r.FinishedAt, len(r.Combinations))
	}
}
