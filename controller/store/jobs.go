package store

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/vlmfleet/vlmfleet/protocol"
	bolt "go.etcd.io/bbolt"
)

// JobRecord is a job with where it stands.
type JobRecord struct {
	Job protocol.Job `json:"job"`
	// State and Attempt are the job's current position; see ApplyJobState.
	State   protocol.JobState `json:"state"`
	Attempt int               `json:"attempt"`
	Error   string            `json:"error,omitempty"`
	RunID   string            `json:"run_id,omitempty"`
	// Published is set once JetStream acknowledged the job; jobs stored but
	// not yet published are published again when the controller starts.
	Published   bool      `json:"published"`
	PublishedAt time.Time `json:"published_at,omitempty"`
	// StreamSeq is the job's sequence in the jobs stream, from JetStream's
	// acknowledgement: a max-deliveries advisory names the job only by it.
	StreamSeq uint64 `json:"stream_seq,omitempty"`
	// CancelRequested is set when a user asked to cancel the job; see
	// RequestCancel and CancelJob.
	CancelRequested bool      `json:"cancel_requested,omitempty"`
	UpdatedAt       time.Time `json:"updated_at"`
	// History holds every state report once, keyed by state and attempt.
	History []JobHistoryEntry `json:"history,omitempty"`
}

// JobHistoryEntry is one reported state.
type JobHistoryEntry struct {
	State      protocol.JobState `json:"state"`
	Attempt    int               `json:"attempt"`
	Time       time.Time         `json:"time"`
	ReceivedAt time.Time         `json:"received_at"`
	Error      string            `json:"error,omitempty"`
}

// JobQuery filters Jobs; empty fields match everything.
type JobQuery struct {
	SweepID string
	AgentID string
	State   protocol.JobState
	// Active keeps only jobs that are not terminal.
	Active bool
}

// CreateSweep stores a sweep and its jobs in one transaction.
func (s *Store) CreateSweep(sw protocol.Sweep, jobs []JobRecord) error {
	err := s.updateView(func(tx *bolt.Tx, ch *viewChange) error {
		sb := tx.Bucket(bucketSweeps)
		if sb.Get([]byte(sw.ID)) != nil {
			return fmt.Errorf("sweep %s exists", sw.ID)
		}
		if err := putJSON(sb, sw.ID, &sw); err != nil {
			return err
		}
		if err := indexSweep(tx, &sw); err != nil {
			return err
		}
		jb := tx.Bucket(bucketJobs)
		for i := range jobs {
			if jb.Get([]byte(jobs[i].Job.ID)) != nil {
				return fmt.Errorf("job %s exists", jobs[i].Job.ID)
			}
			if err := putJSON(jb, jobs[i].Job.ID, &jobs[i]); err != nil {
				return err
			}
			ch.jobs = append(ch.jobs, jobChange{rec: jobs[i]})
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: create sweep %s: %w", sw.ID, err)
	}
	return nil
}

// Sweep returns one sweep or ErrNotFound.
func (s *Store) Sweep(id string) (protocol.Sweep, error) {
	return getOne[protocol.Sweep](s, bucketSweeps, "sweep", id)
}

// Sweeps lists every sweep, oldest first.
func (s *Store) Sweeps(ctx context.Context) ([]protocol.Sweep, error) {
	out, err := getAll[protocol.Sweep](ctx, s, bucketSweeps, "sweeps", nil)
	if err != nil {
		return nil, err
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].CreatedAt.Before(out[j].CreatedAt) })
	return out, nil
}

// PutJob writes a job record as it is. A job of a stored sweep that the
// sweep does not list yet is added to its list: a sweep's jobs are read by
// the ids it lists (Jobs, JobsPage).
func (s *Store) PutJob(j JobRecord) error {
	err := s.updateView(func(tx *bolt.Tx, ch *viewChange) error {
		if err := listInSweep(tx, j.Job); err != nil {
			return err
		}
		b := tx.Bucket(bucketJobs)
		var prev JobRecord
		found, err := getJSON(b, j.Job.ID, &prev)
		if err != nil {
			return err
		}
		ch.jobs = append(ch.jobs, jobWrite(prev, found, j))
		return putJSON(b, j.Job.ID, &j)
	})
	if err != nil {
		return fmt.Errorf("store: put job %s: %w", j.Job.ID, err)
	}
	return nil
}

// Job returns one job or ErrNotFound.
func (s *Store) Job(id string) (JobRecord, error) {
	return getOne[JobRecord](s, bucketJobs, "job", id)
}

// Jobs lists the jobs matching q, oldest first. A sweep's jobs are read
// by the ids its record lists rather than found by a scan of every job.
func (s *Store) Jobs(ctx context.Context, q JobQuery) ([]JobRecord, error) {
	if q.SweepID != "" {
		var out []JobRecord
		found := false
		err := s.db.View(func(tx *bolt.Tx) error {
			jobs, ok, err := jobsOfSweep(ctx, tx, q.SweepID)
			found = ok
			for _, j := range jobs {
				if q.keeps(j.Job.SweepID, j.Job.AgentID, j.State) {
					out = append(out, j)
				}
			}
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("store: jobs: %w", err)
		}
		if found {
			return out, nil
		}
	}
	out, _, err := s.JobsPage(ctx, q, Page{Limit: maxInt})
	if err != nil {
		return nil, err
	}
	sortJobs(out)
	return out, nil
}

// sortJobs orders jobs oldest first, and by id within a sweep.
func sortJobs(jobs []JobRecord) {
	sort.SliceStable(jobs, func(i, j int) bool {
		if !jobs[i].Job.CreatedAt.Equal(jobs[j].Job.CreatedAt) {
			return jobs[i].Job.CreatedAt.Before(jobs[j].Job.CreatedAt)
		}
		return jobs[i].Job.ID < jobs[j].Job.ID
	})
}

// JobByStreamSeq finds the agent's job published as sequence seq of the
// jobs stream, or returns ErrNotFound.
func (s *Store) JobByStreamSeq(ctx context.Context, agentID string, seq uint64) (JobRecord, error) {
	jobs, err := s.Jobs(ctx, JobQuery{AgentID: agentID})
	if err != nil {
		return JobRecord{}, err
	}
	// Newest first: were the stream ever recreated, its sequences restart
	// and the latest job with the number is the one meant.
	for i := len(jobs) - 1; i >= 0; i-- {
		if jobs[i].StreamSeq == seq {
			return jobs[i], nil
		}
	}
	return JobRecord{}, fmt.Errorf("store: job of agent %s at jobs stream sequence %d: %w", agentID, seq, ErrNotFound)
}

// UnpublishedJobs lists the jobs JetStream has not acknowledged yet.
func (s *Store) UnpublishedJobs(ctx context.Context) ([]JobRecord, error) {
	all, err := s.Jobs(ctx, JobQuery{})
	if err != nil {
		return nil, err
	}
	var out []JobRecord
	for _, j := range all {
		// A job that ended before it was published (cancelled) is not sent.
		if !j.Published && !j.State.Terminal() {
			out = append(out, j)
		}
	}
	return out, nil
}

// MarkPublished records that JetStream acknowledged the jobs, each stored
// as the stream sequence seqs gives for its id.
func (s *Store) MarkPublished(at time.Time, seqs map[string]uint64) error {
	// One transaction for all: a sweep's jobs are published together, and
	// a commit (an fsync) for each took seconds for hundreds of jobs.
	err := s.updateView(func(tx *bolt.Tx, ch *viewChange) error {
		b := tx.Bucket(bucketJobs)
		for id, seq := range seqs {
			var j JobRecord
			if err := getExisting(b, id, &j); err != nil {
				return fmt.Errorf("job %s: %w", id, err)
			}
			if j.Published && j.StreamSeq == seq {
				continue
			}
			if !j.Published {
				j.Published = true
				j.PublishedAt = at
			}
			j.StreamSeq = seq
			if err := putJSON(b, id, &j); err != nil {
				return err
			}
			ch.jobs = append(ch.jobs, jobWrite(j, true, j))
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: mark jobs published: %w", err)
	}
	return nil
}

// stateRank orders states within one attempt.
func stateRank(s protocol.JobState) int {
	switch s {
	case protocol.JobQueued:
		return 0
	case protocol.JobAccepted:
		return 1
	case protocol.JobStarting:
		return 2
	case protocol.JobRunning:
		return 3
	}
	return 4 // terminal
}

// ApplyJobState records a state report. Every (state, attempt) enters the
// history once. The current state moves only forward in (attempt, state
// order): a late redelivery of an earlier state is kept in the history but
// never moves a job back, in particular never out of a terminal state,
// while a higher attempt (the job redelivered to a restarted agent) may.
// It reports whether the current state changed. A report is refused with
// a RejectError when it is about a job this store does not hold (see
// applyJobState: a job is stored before it is published, so no real report
// comes first), by an agent other than the job's, or names a run other than
// the attempt's (RunIDFor).
func (s *Store) ApplyJobState(ch protocol.JobStateChange, received time.Time) (JobRecord, bool, error) {
	return s.applyJobState(ch, received, false)
}

// FailJob records a failure the controller found out itself (JetStream gave
// up delivering the job) as a state report of ch.Attempt, through the same
// rules as ApplyJobState, with two more: a job already terminal stays as it
// is whatever the attempt (the agent's own verdict wins), and a job this
// store does not know is not made up (ErrNotFound).
func (s *Store) FailJob(ch protocol.JobStateChange, received time.Time) (JobRecord, bool, error) {
	ch.State = protocol.JobFailed
	return s.applyJobState(ch, received, true)
}

// RequestCancel records that a user asked to cancel the job and returns
// it. A job already terminal is returned unchanged, with changed false.
func (s *Store) RequestCancel(id string, at time.Time) (JobRecord, bool, error) {
	var rec JobRecord
	changed := false
	err := s.updateView(func(tx *bolt.Tx, ch *viewChange) error {
		b := tx.Bucket(bucketJobs)
		if err := getExisting(b, id, &rec); err != nil {
			return err
		}
		if rec.State.Terminal() || rec.CancelRequested {
			return nil
		}
		rec.CancelRequested = true
		rec.UpdatedAt = at
		changed = true
		ch.jobs = append(ch.jobs, jobChange{had: true, prevState: rec.State, prevSweep: rec.Job.SweepID, rec: rec})
		return putJSON(b, id, &rec)
	})
	if err != nil {
		return JobRecord{}, false, fmt.Errorf("store: cancel job %s: %w", id, err)
	}
	return rec, changed, nil
}

// CancelJob records a cancellation the controller made itself (the job was
// still queued, or its agent is offline) as FailJob records a failure, and
// closes the job's running run as cancelled. Once so cancelled, a job
// requested cancelled (RequestCancel) is not moved back by a late
// non-terminal report of an agent that took it meanwhile: only the agent's
// own verdict moves it on.
func (s *Store) CancelJob(ch protocol.JobStateChange, received time.Time) (JobRecord, bool, error) {
	ch.State = protocol.JobCancelled
	return s.applyJobState(ch, received, true)
}

func (s *Store) applyJobState(ch protocol.JobStateChange, received time.Time, verdict bool) (JobRecord, bool, error) {
	if err := protocol.ValidateID("job id", ch.JobID); err != nil {
		return JobRecord{}, false, &RejectError{Reason: "job state: " + err.Error()}
	}
	r := jobStateReport{ch: ch, received: received, verdict: verdict}
	var rec JobRecord
	changed := false
	err := s.updateView(func(tx *bolt.Tx, ch *viewChange) error {
		var err error
		changed, err = s.applyJobReport(tx, r, &rec, ch)
		return err
	})
	if err != nil {
		return JobRecord{}, false, fmt.Errorf("store: job %s state %s: %w", ch.JobID, ch.State, err)
	}
	return rec, changed, nil
}

// jobStateReport is one state report on its way into its job's record:
// what was reported, when it arrived, and whether it is the controller's
// own verdict (FailJob, CancelJob), which changes what is refused, what is
// left alone and whether the job's run is closed.
type jobStateReport struct {
	ch       protocol.JobStateChange
	received time.Time
	verdict  bool
}

// applyJobReport applies r to the job's record inside tx, leaving the
// record as read or written in rec, and reports whether its current state
// changed.
func (s *Store) applyJobReport(tx *bolt.Tx, r jobStateReport, rec *JobRecord, ch *viewChange) (bool, error) {
	b := tx.Bucket(bucketJobs)
	found, err := getJSON(b, r.ch.JobID, rec)
	if err != nil {
		return false, err
	}
	prevState, prevSweep := rec.State, rec.Job.SweepID
	if skip, err := r.admit(*rec, found); skip || err != nil {
		return false, err
	}
	seen := r.addToHistory(rec)
	if r.ch.RunID != "" && rec.RunID == "" {
		rec.RunID = r.ch.RunID
	}
	forward := r.movesForward(*rec)
	if forward {
		r.advance(rec)
	}
	if !forward && seen {
		return false, nil // a pure redelivery: nothing to write
	}
	if r.verdict && forward && rec.RunID != "" {
		if err := s.closeVerdictRun(tx, r, rec.RunID); err != nil {
			return false, err
		}
	}
	ch.jobs = append(ch.jobs, jobChange{had: found, prevState: prevState, prevSweep: prevSweep, rec: *rec})
	return forward, putJSON(b, r.ch.JobID, rec)
}

// admit refuses a report the record cannot take, and skips (skip true) a
// verdict on a job that already has the agent's own. found says whether
// the store holds the job at all.
func (r jobStateReport) admit(rec JobRecord, found bool) (skip bool, err error) {
	ch := r.ch
	if !found && r.verdict {
		return false, ErrNotFound
	}
	if !found {
		// Not made up: a job exists here before it is published (the
		// scheduler stores it first and publishes from that record), and
		// an agent reports only on jobs it was sent, so a report can
		// never precede its job. One about a job this store does not
		// hold comes from a controller whose database was replaced or
		// restored from an older copy, another controller on the same
		// streams, or a confused agent: refused and recorded, for an
		// operator to see, rather than a job with no workload.
		return false, Rejectf("unknown job %s: agent %s reports it %s, but this controller never made it", ch.JobID, ch.AgentID, ch.State)
	}
	if r.verdict && rec.State.Terminal() {
		return true, nil
	}
	if rec.Job.AgentID != ch.AgentID {
		return false, Rejectf("job %s belongs to agent %s, not %s", ch.JobID, rec.Job.AgentID, ch.AgentID)
	}
	if want := RunIDFor(ch.JobID, ch.Attempt); !r.verdict && ch.RunID != "" && ch.RunID != want {
		// The job's run id is what a cancel or failure of the job
		// closes (closeRun): it must be this job's run.
		return false, Rejectf("job %s attempt %d names run %s; its run is %s", ch.JobID, ch.Attempt, ch.RunID, want)
	}
	return false, nil
}

// addToHistory enters the report's (state, attempt) in the history, kept
// in (attempt, state order), unless it is there already; seen says it was.
func (r jobStateReport) addToHistory(rec *JobRecord) (seen bool) {
	ch := r.ch
	for _, h := range rec.History {
		if h.State == ch.State && h.Attempt == ch.Attempt {
			return true
		}
	}
	rec.History = append(rec.History, JobHistoryEntry{State: ch.State, Attempt: ch.Attempt, Time: ch.Time, ReceivedAt: r.received, Error: ch.Error})
	sort.SliceStable(rec.History, func(i, j int) bool {
		a, b := rec.History[i], rec.History[j]
		if a.Attempt != b.Attempt {
			return a.Attempt < b.Attempt
		}
		return stateRank(a.State) < stateRank(b.State)
	})
	return false
}

// movesForward reports whether the report is ahead of the job's current
// state in (attempt, state order). A job the controller cancelled at a
// user's request is moved on only by a terminal report, so a late report
// of an agent that took it meanwhile cannot move it back.
func (r jobStateReport) movesForward(rec JobRecord) bool {
	ch := r.ch
	if rec.CancelRequested && rec.State == protocol.JobCancelled && !ch.State.Terminal() {
		return false
	}
	return ch.Attempt > rec.Attempt ||
		(ch.Attempt == rec.Attempt && stateRank(ch.State) > stateRank(rec.State))
}

// advance makes the report the job's current state.
func (r jobStateReport) advance(rec *JobRecord) {
	rec.State = r.ch.State
	rec.Attempt = r.ch.Attempt
	rec.Error = r.ch.Error
	if r.ch.RunID != "" {
		rec.RunID = r.ch.RunID
	}
	rec.UpdatedAt = r.received
}

// closeVerdictRun closes the run of the job's last attempt along with the
// controller's verdict: no agent will send its final message now.
func (s *Store) closeVerdictRun(tx *bolt.Tx, r jobStateReport, runID string) error {
	status := protocol.RunFailed
	if r.ch.State == protocol.JobCancelled {
		status = protocol.RunCancelled
	}
	if err := closeRun(tx, runID, status, r.ch.Error, r.received); err != nil {
		return err
	}
	s.runsChanged(tx)
	return nil
}
