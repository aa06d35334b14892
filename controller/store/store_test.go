package store

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/protocol"
)

func openTest(t *testing.T) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "vlmfleet.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func testWorkload() protocol.Workload {
	w := protocol.DefaultWorkload()
	w.Sizes = []string{"480p", "720p"}
	w.Cameras = []int{1, 2}
	w.MultiImageSizes = nil
	w.ImagesPerRequest = nil
	return w
}

func testRun(id, agent string) protocol.Run {
	return protocol.Run{
		Schema: protocol.SchemaVersion, ID: id, AgentID: agent, Simulated: true, Source: protocol.SourceLab,
		Config:   protocol.Configuration{Model: "Qwen3-VL-4B-Instruct", ParamsB: 4.4, Quantization: "Q8_0", Engine: "llama.cpp", Device: "Jetson AGX Orin"},
		Workload: testWorkload(), Status: protocol.RunRunning, CreatedAt: time.Unix(1700000000, 0).UTC(),
	}
}

func combo(size string, cams int) *protocol.Combination {
	return &protocol.Combination{
		ComboKey: protocol.ComboKey{Size: size, Images: 1, Cameras: cams}, Completed: 1,
		TTFT:     protocol.Stats{N: 1, Mean: 1.3},
		Requests: []protocol.RequestRecord{{Camera: 0, Seq: 0, TTFT: 1.3, CompletionTokens: 128}},
		TelemetrySeries: []protocol.TelemetrySample{
			{Time: time.Unix(1700000001, 0).UTC(), Rails: map[string]float64{"VDD_GPU_SOC": 22.5}, Extra: map[string]float64{"ram_used_mb": 10239}},
		},
	}
}

func TestApplyResultIdempotentAndPlanOrder(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	run := labRun(t, s, "j1", "a1")
	msgs := []protocol.ResultMessage{
		{Schema: 1, AgentID: "a1", Run: run, Combination: combo("720p", 1)},
		{Schema: 1, AgentID: "a1", Run: run, Combination: combo("480p", 2)},
		{Schema: 1, AgentID: "a1", Run: run, Combination: combo("480p", 1)},
	}
	for _, m := range append(msgs, msgs[0], msgs[1]) { // two redeliveries
		if err := s.ApplyResult(m, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	final := run
	final.Status = protocol.RunCompleted
	final.FinishedAt = time.Unix(1700000100, 0).UTC()
	if err := s.ApplyResult(protocol.ResultMessage{Schema: 1, AgentID: "a1", Run: final, Final: true, Expected: 3}, time.Now()); err != nil {
		t.Fatal(err)
	}
	// A late redelivery of a running header must not reopen the run.
	if err := s.ApplyResult(msgs[2], time.Now()); err != nil {
		t.Fatal(err)
	}
	got, err := s.Run(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != protocol.RunCompleted || got.FinishedAt.IsZero() {
		t.Errorf("status %s finished %v, want completed with a finish time", got.Status, got.FinishedAt)
	}
	var keys []string
	for _, c := range got.Combinations {
		keys = append(keys, c.ComboKey.String())
		if len(c.Requests) != 1 {
			t.Errorf("%s: %d request records, want 1", c.ComboKey, len(c.Requests))
		}
	}
	if want := "480p-1img-1cam 480p-1img-2cam 720p-1img-1cam"; strings.Join(keys, " ") != want {
		t.Errorf("combinations %v, want %s", keys, want)
	}
	sum, err := s.RunsSummary(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(sum) != 1 || len(sum[0].Combinations) != 3 || sum[0].Combinations[0].Requests != nil {
		t.Errorf("summary: %+v", sum)
	}
}

func TestApplyResultRejectsOtherAgentsRun(t *testing.T) {
	s := openTest(t)
	run := labRun(t, s, "j1", "a1")
	if err := s.ApplyResult(protocol.ResultMessage{Schema: 1, AgentID: "a1", Run: run, Combination: combo("480p", 1)}, time.Now()); err != nil {
		t.Fatal(err)
	}
	run.AgentID = ""
	err := s.ApplyResult(protocol.ResultMessage{Schema: 1, AgentID: "a2", Run: run, Combination: combo("480p", 1)}, time.Now())
	var rej *RejectError
	if !errors.As(err, &rej) {
		t.Fatalf("got %v, want a RejectError", err)
	}
}

func TestJobStateMachine(t *testing.T) {
	s := openTest(t)
	job := JobRecord{Job: protocol.Job{Schema: 1, ID: "j1", AgentID: "a1", Deployment: "d", Workload: testWorkload()}, State: protocol.JobQueued}
	if err := s.CreateSweep(protocol.Sweep{ID: "s1", Jobs: []string{"j1"}}, []JobRecord{job}); err != nil {
		t.Fatal(err)
	}
	apply := func(st protocol.JobState, attempt int) (JobRecord, bool) {
		t.Helper()
		rec, changed, err := s.ApplyJobState(protocol.JobStateChange{Schema: 1, JobID: "j1", AgentID: "a1", State: st, Attempt: attempt, Time: time.Now()}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return rec, changed
	}
	apply(protocol.JobAccepted, 1)
	apply(protocol.JobRunning, 1)
	if rec, _ := apply(protocol.JobCompleted, 1); rec.State != protocol.JobCompleted {
		t.Fatalf("state %s, want completed", rec.State)
	}
	if rec, changed := apply(protocol.JobRunning, 1); changed || rec.State != protocol.JobCompleted {
		t.Errorf("late running moved the job to %s (changed %v)", rec.State, changed)
	}
	if rec, changed := apply(protocol.JobFailed, 1); changed || rec.State != protocol.JobCompleted {
		t.Errorf("a second terminal state replaced the first: %s", rec.State)
	}
	rec, _ := apply(protocol.JobCompleted, 1) // redelivery
	if len(rec.History) != 4 {
		t.Errorf("history has %d entries, want 4 (accepted, running, completed, failed once each): %+v", len(rec.History), rec.History)
	}
	if rec, changed := apply(protocol.JobAccepted, 2); !changed || rec.State != protocol.JobAccepted || rec.Attempt != 2 {
		t.Errorf("a new attempt did not move the job: %s attempt %d", rec.State, rec.Attempt)
	}
	_, _, err := s.ApplyJobState(protocol.JobStateChange{Schema: 1, JobID: "j1", AgentID: "intruder", State: protocol.JobFailed, Attempt: 9}, time.Now())
	var rej *RejectError
	if !errors.As(err, &rej) {
		t.Errorf("another agent's report: got %v, want a RejectError", err)
	}
}

func TestImportIsAtomic(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	good := testRun("imp1", "")
	good.Source = protocol.SourceBench
	good.Status = protocol.RunCompleted
	good.Combinations = []protocol.Combination{*combo("720p", 1)}
	good.Combinations[0].Completed, good.Combinations[0].TTFT.N = 1, 1 // as many as its one request record
	bad := testRun("imp2", "")
	bad.Workload.Cameras = []int{0}
	_, err := s.ImportRuns([]ImportEntry{{Origin: "a.json", Run: good}, {Origin: "b.json", Run: bad}})
	if err == nil || !strings.Contains(err.Error(), "runs[1] (origin b.json)") || !strings.Contains(err.Error(), "workload.cameras[0]") {
		t.Fatalf("got %v, want an error naming runs[1], b.json and the field", err)
	}
	if runs, _ := s.RunsSummary(ctx); len(runs) != 0 {
		t.Fatalf("%d runs stored after a failed import, want 0", len(runs))
	}
	ids, err := s.ImportRuns([]ImportEntry{{Origin: "a.json", Run: good}})
	if err != nil || len(ids) != 1 {
		t.Fatalf("ids %v err %v", ids, err)
	}
	// Re-importing replaces rather than duplicates.
	if _, err := s.ImportRuns([]ImportEntry{{Origin: "a.json", Run: good}}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Run(ctx, "imp1")
	if err != nil {
		t.Fatal(err)
	}
	if got.Source != protocol.SourceImport || got.Origin != "a.json (bench)" || len(got.Combinations) != 1 {
		t.Errorf("source %q origin %q combos %d", got.Source, got.Origin, len(got.Combinations))
	}
	// A lab run's id is refused.
	labHeader := labRun(t, s, "lab", "a1")
	if err := s.ApplyResult(protocol.ResultMessage{Schema: 1, AgentID: "a1", Run: labHeader, Combination: combo("480p", 1)}, time.Now()); err != nil {
		t.Fatal(err)
	}
	lab := good
	lab.ID = labHeader.ID
	if _, err := s.ImportRuns([]ImportEntry{{Origin: "c.json", Run: lab}}); err == nil || !strings.Contains(err.Error(), "already exists here as a lab run") {
		t.Errorf("got %v, want a refusal of the lab run id", err)
	}
}

func TestSecondOpenNamesTheHolder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "vlmfleet.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = Open(path, Options{LockTimeout: 50 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "locked by another vlmfleet (pid") {
		t.Fatalf("got %v, want a lock error naming the pid", err)
	}
}

func TestRejectedIsRecorded(t *testing.T) {
	s := openTest(t)
	if err := s.Reject(Rejection{Subject: "vlmfleet.agent.x.result", Reason: "bad"}, []byte("{not json")); err != nil {
		t.Fatal(err)
	}
	got, err := s.Rejected(context.Background(), 0)
	if err != nil || len(got) != 1 || got[0].Reason != "bad" || got[0].Excerpt != "{not json" {
		t.Fatalf("got %+v, %v", got, err)
	}
}

func TestRunsGenerationMovesOnlyWhenRunsChange(t *testing.T) {
	s := openTest(t)
	good := testRun("gen1", "")
	good.Source = protocol.SourceBench
	good.Status = protocol.RunCompleted
	good.Combinations = []protocol.Combination{*combo("720p", 1)}
	good.Combinations[0].Completed, good.Combinations[0].TTFT.N = 1, 1
	bad := testRun("gen2", "")
	bad.Workload.Cameras = []int{0}
	g0 := s.RunsGeneration()
	if _, err := s.ImportRuns([]ImportEntry{{Origin: "a.json", Run: good}}); err != nil {
		t.Fatal(err)
	}
	g1 := s.RunsGeneration()
	if g1 == g0 {
		t.Fatalf("generation still %d after an import", g1)
	}
	// A refused import rolls back and must not invalidate readers' caches.
	if _, err := s.ImportRuns([]ImportEntry{{Origin: "b.json", Run: bad}}); err == nil {
		t.Fatal("a run with 0 cameras was imported")
	}
	if g := s.RunsGeneration(); g != g1 {
		t.Fatalf("generation moved %d → %d on a rolled-back import", g1, g)
	}
	labHeader := labRun(t, s, "lab", "a1")
	g2 := s.RunsGeneration()
	if err := s.ApplyResult(protocol.ResultMessage{Schema: 1, AgentID: "a1", Run: labHeader, Combination: combo("480p", 1)}, time.Now()); err != nil {
		t.Fatal(err)
	}
	if g := s.RunsGeneration(); g == g2 {
		t.Fatalf("generation still %d after a result", g)
	}
}
