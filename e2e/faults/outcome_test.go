package faults

import (
	"fmt"
	"strings"
	"testing"

	"github.com/vlmfleet/vlmfleet/controller/client"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// outcome is what a sweep left in the store, counted the way the issue
// asks: nothing lost, nothing stored twice, no failure that did not happen.
type outcome struct {
	jobs int
	// lost counts jobs that did not complete, or whose completed run lacks
	// a combination of the plan.
	lost int
	// duplicated counts combinations stored more than once for one job:
	// in a second completed run, or twice in one.
	duplicated int
	// falselyFailed counts failed runs of attempts that no agent was
	// stopped during (the test knows which agents it killed).
	falselyFailed int
	// secondAttempts counts jobs that needed more than one delivery;
	// retried names their agents.
	secondAttempts int
	retried        []string
	rejected       int
	// problems says what each count above is made of.
	problems []string
}

func (o *outcome) problem(format string, args ...any) {
	o.problems = append(o.problems, fmt.Sprintf(format, args...))
}

// outcome reads the sweep's jobs and runs from the controller. interrupted
// names the jobs whose agent the test killed while it ran them: their
// attempt before the kill may fail, and they may need another attempt.
func (l *lab) outcome(s protocol.Sweep, interrupted map[string]bool) outcome {
	l.t.Helper()
	jobs, err := l.cl.Jobs(l.ctx, client.JobFilter{Sweep: s.ID})
	if err != nil {
		l.t.Fatal(err)
	}
	runs, err := l.cl.Runs(l.ctx, client.RunFilter{Sweep: s.ID, NoSeries: true})
	if err != nil {
		l.t.Fatal(err)
	}
	rejected, err := l.cl.Rejected(l.ctx, 1000)
	if err != nil {
		l.t.Fatal(err)
	}
	byJob := map[string][]protocol.Run{}
	for _, r := range runs {
		byJob[r.JobID] = append(byJob[r.JobID], r)
	}
	plan := len(s.Workload.Plan())
	o := outcome{jobs: len(jobs), rejected: len(rejected)}
	for _, r := range rejected {
		o.problem("rejected: %s", r.Reason)
	}
	for _, j := range jobs {
		reported := map[int]bool{}
		last := 0
		for _, h := range j.History {
			reported[h.Attempt] = true
			last = max(last, h.Attempt)
		}
		if last > 1 {
			o.secondAttempts++
			o.retried = append(o.retried, j.AgentID)
			if !interrupted[j.ID] {
				var hist []string
				for _, h := range j.History {
					hist = append(hist, fmt.Sprintf("%s@%d %s", h.State, h.Attempt, h.Time.Format("15:04:05.000")))
				}
				o.problem("job %s of agent %s needed attempt %d: %s", j.ID, j.AgentID, last, strings.Join(hist, ", "))
			}
		}
		if j.State != protocol.JobCompleted {
			o.lost++
			o.problem("job %s ended %s: %s", j.ID, j.State, j.Error)
			continue
		}
		stored := map[string]int{}
		for _, r := range byJob[j.ID] {
			switch r.Status {
			case protocol.RunRunning:
				o.problem("run %s of ended job %s is still running", r.ID, j.ID)
				o.falselyFailed++
			case protocol.RunCompleted:
				for _, c := range r.Combinations {
					stored[c.ComboKey.String()]++
				}
			case protocol.RunFailed:
				a := 0
				_, _ = fmt.Sscanf(r.ID[len(j.ID):], "-a%d", &a)
				if !interrupted[j.ID] || !reported[a] {
					o.falselyFailed++
					o.problem("run %s failed though no agent stopped during it: %s", r.ID, r.Error)
				}
			}
		}
		if len(stored) < plan {
			o.lost++
			o.problem("job %s: %d of %d combinations stored", j.ID, len(stored), plan)
		}
		for k, n := range stored {
			if n > 1 {
				o.duplicated += n - 1
				o.problem("job %s: combination %s stored %d times", j.ID, k, n)
			}
		}
	}
	return o
}

// check fails the test for anything lost, duplicated, falsely failed or
// rejected.
func (o outcome) check(t *testing.T) {
	t.Helper()
	for _, p := range o.problems {
		t.Error(p)
	}
	if o.lost+o.duplicated+o.falselyFailed+o.rejected > 0 {
		t.Errorf("%d jobs: %d lost, %d combinations duplicated, %d runs falsely failed, %d messages rejected",
			o.jobs, o.lost, o.duplicated, o.falselyFailed, o.rejected)
	}
}
