package store

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	jsonv1 "github.com/go-json-experiment/json/v1"

	"github.com/vlmfleet/vlmfleet/controller/received"
	"github.com/vlmfleet/vlmfleet/protocol"
	bolt "go.etcd.io/bbolt"
)

// runRecord is the stored run header. The combinations live in the combos
// bucket and their per-request records in the requests bucket.
type runRecord struct {
	Run protocol.Run `json:"run"`
	// Expected is, once the final message arrived, how many combinations the
	// agent said it published.
	Expected  int       `json:"expected,omitempty"`
	Final     bool      `json:"final,omitempty"`
	UpdatedAt time.Time `json:"updated_at"`
}

// RunQuery filters run listings; empty fields match everything.
type RunQuery struct {
	AgentID string
	Status  string
	SweepID string
	Source  string
	// Requests includes the per-request records (large).
	Requests bool
	// NoSeries leaves out the combinations' telemetry series: most of what
	// is left of a run without its records, and nothing an answer or a
	// count reads.
	NoSeries bool
}

// ErrUnreportedAttempt is ApplyResult's answer to a final message closing
// an attempt that no agent ever reported (see ApplyResult): nothing is
// stored, and nothing is wrong with the message either.
var ErrUnreportedAttempt = errors.New("closes an attempt no agent reported: nothing to close")

// ApplyResult stores one result message. The run header is upserted, the
// combination written at run/combination so a redelivery rewrites the same
// record, and a final message sets the run's closing header. A non-final
// message that arrives after it (a redelivered "running" after the final
// "failed") adds its combination but leaves the header as the final message
// wrote it. A final message closing an attempt that its job never
// reported is not stored (ErrUnreportedAttempt). A message about a run that
// belongs to another agent
// or was imported is refused with a RejectError, and so is one about a run
// that is not a reported attempt of a job of the sending agent (see
// checkLabRun): nothing is made up for it. Imports (ImportRuns) do not come
// this way and name no job.
func (s *Store) ApplyResult(m protocol.ResultMessage, receivedAt time.Time) error {
	r, err := PrepareResult(&received.Result{ResultMessage: m})
	if err != nil {
		return fmt.Errorf("store: result for run %s: %w", m.Run.ID, err)
	}
	return s.ApplyPrepared(r, receivedAt)
}

// ApplyPrepared is ApplyResult for a message PrepareResult prepared.
func (s *Store) ApplyPrepared(r *Result, receivedAt time.Time) error {
	err := s.db.Update(func(tx *bolt.Tx) error {
		s.runsChanged(tx)
		w := newResultWriter(tx)
		if err := w.apply(r, receivedAt); err != nil {
			return err
		}
		return w.flush()
	})
	if err != nil {
		return fmt.Errorf("store: result for run %s: %w", r.Run.ID, err)
	}
	return nil
}

// BatchError is ApplyResults' answer when its transaction fails at one of
// its messages (a store error, not a refusal): Index is that message, Err
// what ApplyResult would have said of it alone.
type BatchError struct {
	Index int
	Err   error
}

func (e *BatchError) Error() string {
	return fmt.Sprintf("store: result %d of a batch: %v (nothing of the batch is stored)", e.Index, e.Err)
}
func (e *BatchError) Unwrap() error { return e.Err }

// Refused says whether ApplyResult's err leaves its message unstored for
// good without anything being wrong with the store: a *RejectError, or
// ErrUnreportedAttempt. Such a message is settled on its own while the
// others of its batch are stored.
func Refused(err error) bool {
	var rej *RejectError
	return errors.As(err, &rej) || errors.Is(err, ErrUnreportedAttempt)
}

// ApplyResults stores result messages in order, in one transaction: one
// write to disk (and its fsync) for all of them, where ApplyResult makes
// one each, which is what bounds the ingest rate. Each message is applied
// as ApplyResult applies it alone, later ones seeing what earlier ones
// wrote; a run's header and its job are decoded once for the batch, and
// the header written once, as the last of its messages left it. The
// messages' records were encoded before (PrepareResult), so that the
// transaction, which one writer holds at a time, only writes them.
//
// A message the store refuses (Refused: a *RejectError, or
// ErrUnreportedAttempt) is left out and the others are stored in the same
// transaction: refused[i] is why message i was not stored, nil when it
// was. A refusal is decided before its message writes anything (apply),
// so leaving it out leaves the transaction as if it had not come. err
// is a failure of the transaction itself, which then stores nothing: a
// *BatchError names the message it failed at, when it failed at one.
func (s *Store) ApplyResults(ms []*Result, receivedAt time.Time) (refused []error, err error) {
	err = s.db.Update(func(tx *bolt.Tx) error {
		s.runsChanged(tx)
		refused = make([]error, len(ms))
		w := newResultWriter(tx)
		for i, m := range ms {
			err := w.apply(m, receivedAt)
			switch {
			case err == nil:
			case Refused(err):
				refused[i] = fmt.Errorf("store: result for run %s: %w", m.Run.ID, err)
			default:
				return &BatchError{Index: i, Err: fmt.Errorf("result for run %s: %w", m.Run.ID, err)}
			}
		}
		return w.flush()
	})
	if err != nil {
		return nil, err
	}
	return refused, nil
}

// resultWriter applies result messages within one transaction. It keeps
// what it read of each run and job, so that many messages of one run cost
// one read of its records, and writes each run's header once, at flush.
type resultWriter struct {
	tx    *bolt.Tx
	jobs  map[string]*jobAttempts
	runs  map[string]*cachedRun
	dirty []string // runs to write at flush, in the order first changed
}

// cachedRun is a run's stored header as the messages so far left it.
type cachedRun struct {
	rec           runRecord
	exists, dirty bool
	parts         runParts
}

func newResultWriter(tx *bolt.Tx) *resultWriter {
	return &resultWriter{tx: tx, jobs: map[string]*jobAttempts{}, runs: map[string]*cachedRun{}}
}

// apply is ApplyResult's logic for one message; an error leaves the
// transaction to be rolled back.
func (w *resultWriter) apply(m *Result, receivedAt time.Time) error {
	if err := protocol.ValidateID("run id", m.Run.ID); err != nil {
		return &RejectError{Reason: "result message: " + err.Error()}
	}
	run := m.Run
	run.Combinations = nil
	if run.AgentID == "" {
		run.AgentID = m.AgentID
	}
	if run.AgentID != m.AgentID {
		return &RejectError{Reason: fmt.Sprintf("run %s names agent %s but was sent by %s", run.ID, run.AgentID, m.AgentID)}
	}
	// Everything that arrives over the lab's NATS was measured by the lab.
	run.Source = protocol.SourceLab
	job, attempt, err := w.checkLabRun(run)
	if err != nil {
		return err
	}
	cr, err := w.run(run.ID)
	if err != nil {
		return err
	}
	rec, exists := &cr.rec, cr.exists
	if !exists && m.Final && m.Combination == nil && !job.reported(attempt) {
		// An agent that takes a job again closes the previous
		// attempt's run, not knowing whether that attempt ever reached
		// an agent: a delivery can be lost on its way (to a pull its
		// agent gave up on) and the job delivered again after the ack
		// wait. No agent reported this attempt, so it measured nothing:
		// a failed run for it would be false.
		return ErrUnreportedAttempt
	}
	if exists {
		if rec.Run.Source != protocol.SourceLab {
			return Rejectf("run id %s is already used by a run from %s (%s)", run.ID, rec.Run.Source, rec.Run.Origin)
		}
		if rec.Run.AgentID != m.AgentID {
			return Rejectf("run %s belongs to agent %s, not %s", run.ID, rec.Run.AgentID, m.AgentID)
		}
	}
	// Once the run is closed, a late or redelivered progress message
	// carries an older header (it may lack what the final one set, such
	// as the engine's log tail on failure): the stored header stays and
	// only the combination is written.
	closed := exists && (rec.Final || rec.Run.Status != protocol.RunRunning)
	// The first final message decides how the run ended: a later one (an
	// agent closing an attempt it believes was cut short, which in fact
	// completed before its job was acknowledged) does not rewrite it.
	firstFinal := m.Final && !(exists && rec.Final)
	if firstFinal || !closed {
		rec.Run = run
		if m.Final {
			rec.Final = true
			rec.Expected = m.Expected
		}
		rec.UpdatedAt = receivedAt
		cr.exists = true
		if !cr.dirty {
			cr.dirty = true
			w.dirty = append(w.dirty, run.ID)
		}
	}
	if m.Combination == nil {
		return nil
	}
	return putRecords(w.tx, run.ID, &cr.parts, m.key, m.combo, m.requests)
}

// flush writes the run headers the messages changed.
func (w *resultWriter) flush() error {
	rb := w.tx.Bucket(bucketRuns)
	for _, id := range w.dirty {
		if err := putJSON(rb, id, &w.runs[id].rec); err != nil {
			return err
		}
	}
	return nil
}

// run is run id's stored header, read once per writer. Only what apply
// looks at is read: a header it writes, it writes whole.
func (w *resultWriter) run(id string) (*cachedRun, error) {
	if cr, ok := w.runs[id]; ok {
		return cr, nil
	}
	cr := &cachedRun{}
	if data := w.tx.Bucket(bucketRuns).Get([]byte(id)); data != nil {
		var f struct {
			Run struct {
				Source  string `json:"source"`
				Origin  string `json:"origin"`
				AgentID string `json:"agent_id"`
				Status  string `json:"status"`
			} `json:"run"`
			Expected int  `json:"expected"`
			Final    bool `json:"final"`
		}
		if err := jsonv2.Unmarshal(data, &f, jsonv1.DefaultOptionsV1()); err != nil {
			return nil, fmt.Errorf("decode %s: %w", id, err)
		}
		cr.exists = true
		cr.rec.Final, cr.rec.Expected = f.Final, f.Expected
		cr.rec.Run.Source, cr.rec.Run.Origin, cr.rec.Run.AgentID, cr.rec.Run.Status = f.Run.Source, f.Run.Origin, f.Run.AgentID, f.Run.Status
	}
	w.runs[id] = cr
	return cr, nil
}

// jobAttempts is what the checks of a result read of its job.
type jobAttempts struct {
	Job struct {
		AgentID string `json:"agent_id"`
	} `json:"job"`
	Attempt int `json:"attempt"`
	History []struct {
		Attempt int `json:"attempt"`
	} `json:"history"`
}

// lastAttempt is the highest attempt the job has reached: reported by its
// agent (every report is in the history, even one that did not move the
// job) or set by the controller's own verdict.
func (j *jobAttempts) lastAttempt() int {
	n := j.Attempt
	for _, h := range j.History {
		n = max(n, h.Attempt)
	}
	return n
}

// reported says whether the job's agent reported the attempt at all.
func (j *jobAttempts) reported(attempt int) bool {
	for _, h := range j.History {
		if h.Attempt == attempt {
			return true
		}
	}
	return false
}

// runParts are a run's buckets of combinations and of request records,
// opened (or made) by the first putCombination of a transaction.
type runParts struct{ combos, reqs *bolt.Bucket }

// putRecords stores a combination's records under key in run runID's
// buckets, which parts holds once opened; requests nil means it has none.
func putRecords(tx *bolt.Tx, runID string, parts *runParts, key string, combo, requests []byte) error {
	if parts.combos == nil {
		cb, err := tx.Bucket(bucketCombos).CreateBucketIfNotExists([]byte(runID))
		if err != nil {
			return fmt.Errorf("combos of %s: %w", runID, err)
		}
		qb, err := tx.Bucket(bucketRequests).CreateBucketIfNotExists([]byte(runID))
		if err != nil {
			return fmt.Errorf("requests of %s: %w", runID, err)
		}
		parts.combos, parts.reqs = cb, qb
	}
	if err := parts.combos.Put([]byte(key), combo); err != nil {
		return fmt.Errorf("put %s: %w", key, err)
	}
	if requests == nil {
		return parts.reqs.Delete([]byte(key))
	}
	if err := parts.reqs.Put([]byte(key), requests); err != nil {
		return fmt.Errorf("put the requests of %s: %w", key, err)
	}
	return nil
}

// Runs lists every run with its combinations and per-request records.
func (s *Store) Runs(ctx context.Context) ([]protocol.Run, error) {
	return s.ListRuns(ctx, RunQuery{Requests: true})
}

// RunsSummary lists every run with its combinations but no per-request records.
func (s *Store) RunsSummary(ctx context.Context) ([]protocol.Run, error) {
	return s.ListRuns(ctx, RunQuery{})
}

// ListRuns lists the runs matching q, oldest first, each with its
// combinations in plan order.
func (s *Store) ListRuns(ctx context.Context, q RunQuery) ([]protocol.Run, error) {
	var out []protocol.Run
	err := s.db.View(func(tx *bolt.Tx) error {
		return forEachJSON(ctx, tx.Bucket(bucketRuns), func(_ string, rec *runRecord) error {
			r := rec.Run
			switch {
			case q.AgentID != "" && r.AgentID != q.AgentID,
				q.Status != "" && r.Status != q.Status,
				q.SweepID != "" && r.SweepID != q.SweepID,
				q.Source != "" && r.Source != q.Source:
				return nil
			}
			if err := loadCombinations(tx, &r, q.Requests, true); err != nil {
				return err
			}
			out = append(out, r)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("store: runs: %w", err)
	}
	sortRuns(out)
	return out, nil
}

// Run returns one run with everything, or ErrNotFound.
func (s *Store) Run(ctx context.Context, id string) (protocol.Run, error) {
	return s.getRun(id, true)
}

// RunSummary returns one run without per-request records, or ErrNotFound.
func (s *Store) RunSummary(ctx context.Context, id string) (protocol.Run, error) {
	return s.getRun(id, false)
}

func (s *Store) getRun(id string, requests bool) (protocol.Run, error) {
	var r protocol.Run
	err := s.db.View(func(tx *bolt.Tx) error {
		var rec runRecord
		if err := getExisting(tx.Bucket(bucketRuns), id, &rec); err != nil {
			return err
		}
		r = rec.Run
		return loadCombinations(tx, &r, requests, true)
	})
	if err != nil {
		return protocol.Run{}, fmt.Errorf("store: run %s: %w", id, err)
	}
	return r, nil
}

func loadCombinations(tx *bolt.Tx, r *protocol.Run, requests, series bool) error {
	r.Combinations = []protocol.Combination{}
	cb := tx.Bucket(bucketCombos).Bucket([]byte(r.ID))
	if cb == nil {
		return nil
	}
	var qb *bolt.Bucket
	if requests {
		qb = tx.Bucket(bucketRequests).Bucket([]byte(r.ID))
	}
	err := cb.ForEach(func(k, v []byte) error {
		c, err := readCombination(v, series)
		if err != nil {
			return fmt.Errorf("run %s combination %s: %w", r.ID, k, err)
		}
		if qb != nil {
			if data := qb.Get(k); data != nil {
				if c.Requests, err = readRequests(data); err != nil {
					return fmt.Errorf("run %s requests of %s: %w", r.ID, k, err)
				}
			}
		}
		r.Combinations = append(r.Combinations, c)
		return nil
	})
	if err != nil {
		return err
	}
	SortCombinations(r.Workload, r.Combinations)
	return nil
}

// SortCombinations orders combinations as the workload's plan runs them;
// combinations outside the plan follow, by size, images and cameras. A
// workload past protocol's limits (a run header is not held to them) is
// not planned: its combinations are all ordered so.
func SortCombinations(w protocol.Workload, cs []protocol.Combination) {
	order := map[protocol.ComboKey]int{}
	if w.CheckSize() == nil {
		for i, p := range w.Plan() {
			order[p.ComboKey] = i
		}
	}
	rank := func(k protocol.ComboKey) int {
		if i, ok := order[k]; ok {
			return i
		}
		return len(order)
	}
	sort.SliceStable(cs, func(i, j int) bool {
		a, b := cs[i].ComboKey, cs[j].ComboKey
		if ra, rb := rank(a), rank(b); ra != rb {
			return ra < rb
		}
		if sa, sb := protocol.SizeRank(a.Size), protocol.SizeRank(b.Size); sa != sb {
			return sa < sb
		}
		if a.Images != b.Images {
			return a.Images < b.Images
		}
		return a.Cameras < b.Cameras
	})
}

// RunCombinationCount is how many combinations are stored for a run.
func (s *Store) RunCombinationCount(id string) (int, error) {
	n := 0
	err := s.db.View(func(tx *bolt.Tx) error {
		if cb := tx.Bucket(bucketCombos).Bucket([]byte(id)); cb != nil {
			n = cb.Stats().KeyN
		}
		return nil
	})
	return n, err
}

// closeRun marks a run that is still running as ended with status (failed
// or cancelled) and the reason, as its final message would have.
func closeRun(tx *bolt.Tx, runID, status, reason string, at time.Time) error {
	rb := tx.Bucket(bucketRuns)
	var rec runRecord
	ok, err := getJSON(rb, runID, &rec)
	if err != nil || !ok || rec.Final || rec.Run.Status != protocol.RunRunning {
		return err
	}
	rec.Run.Status = status
	rec.Run.Error = reason
	rec.Run.FinishedAt = at.UTC()
	rec.Final = true
	rec.UpdatedAt = at
	return putJSON(rb, runID, &rec)
}

// RunIDFor is the id of the run of a job's attempt, as agents name it
// (agent/job.go): <job>-a<attempt>.
func RunIDFor(jobID string, attempt int) string {
	return fmt.Sprintf("%s-a%d", jobID, attempt)
}

// checkLabRun refuses, with a RejectError, a lab run that is not the run of
// an attempt its job has reported: a lab run names its job, which this
// store holds and which belongs to the run's agent (the sender, checked by
// ApplyResult), and its id is RunIDFor(job, attempt) for an attempt up to
// the job's last.
//
// No real result is refused so: the job is stored before it is published,
// and an agent publishes an attempt's accepted state before any result of
// it (a late final of an earlier attempt, closing a run the agent lost,
// follows too), on the one events stream the controller consumes in order.
// Only a redelivery can reorder them: a state message the store failed to
// take (a transient error, retried with a delay) may be overtaken by the
// attempt's first results, which are then refused and recorded. That needs
// a store failing for one write and not the next; the refusal keeps the
// message under /api/rejected, where an operator sees it.
func (w *resultWriter) checkLabRun(run protocol.Run) (job *jobAttempts, attempt int, err error) {
	if run.JobID == "" {
		return nil, 0, Rejectf("run %s names no job: a lab run is the run of a job this controller made", run.ID)
	}
	job, ok := w.jobs[run.JobID]
	if !ok {
		if data := w.tx.Bucket(bucketJobs).Get([]byte(run.JobID)); data != nil {
			job = &jobAttempts{}
			if err := jsonv2.Unmarshal(data, job, jsonv1.DefaultOptionsV1()); err != nil {
				return nil, 0, fmt.Errorf("decode %s: %w", run.JobID, err)
			}
		}
		w.jobs[run.JobID] = job
	}
	if job == nil {
		return nil, 0, Rejectf("run %s: unknown job %s: this controller never made it", run.ID, run.JobID)
	}
	if job.Job.AgentID != run.AgentID {
		return job, 0, Rejectf("run %s: job %s belongs to agent %s, not %s", run.ID, run.JobID, job.Job.AgentID, run.AgentID)
	}
	attempt, ok = runAttempt(run.ID, run.JobID)
	if !ok {
		return job, 0, Rejectf("run id %s is not the run of an attempt of job %s (%s-a<attempt>)", run.ID, run.JobID, run.JobID)
	}
	if last := job.lastAttempt(); attempt > last {
		return job, 0, Rejectf("run %s: job %s has not reported attempt %d (its last is %d)", run.ID, run.JobID, attempt, last)
	}
	return job, attempt, nil
}

// runAttempt is the attempt whose run id (RunIDFor) is runID, and whether
// runID is one of jobID's.
func runAttempt(runID, jobID string) (int, bool) {
	rest, ok := strings.CutPrefix(runID, jobID+"-a")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n < 1 || RunIDFor(jobID, n) != runID {
		return 0, false
	}
	return n, true
}
