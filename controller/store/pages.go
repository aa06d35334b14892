package store

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/vlmfleet/vlmfleet/protocol"
	bolt "go.etcd.io/bbolt"
)

// Page is one page of a listing in the bucket's key order: at most Limit
// records whose keys come after After (before it when Newest). A page
// starts from a key, not an offset, so records written between two pages
// neither repeat nor push a record off the next page.
type Page struct {
	// After is the key of the last record of the previous page ("": the
	// start).
	After string
	// Limit bounds the page; it must be at least 1.
	Limit int
	// Newest walks the keys backwards: for sweeps, jobs and lab runs, whose
	// ids start with the time they were made, newest first.
	Newest bool
}

// pageScan walks b from p's position in p's direction and calls take for
// every record that match accepts (every record when match is nil), up to
// p.Limit of them. It returns the key of the last record taken when
// another record matches after it (the next page's After), else "". The
// context is checked between records, so a filter over a large bucket can
// be abandoned.
func pageScan(ctx context.Context, b *bolt.Bucket, p Page, match func(v []byte) (bool, error), take func(k, v []byte) error) (string, error) {
	if p.Limit < 1 {
		return "", fmt.Errorf("page limit %d: want at least 1", p.Limit)
	}
	c := b.Cursor()
	var k, v []byte
	step := c.Next
	switch {
	case p.Newest:
		step = c.Prev
		if p.After == "" {
			k, v = c.Last()
		} else if k, _ = c.Seek([]byte(p.After)); k == nil {
			k, v = c.Last()
		} else {
			k, v = c.Prev()
		}
	case p.After == "":
		k, v = c.First()
	default:
		k, v = c.Seek([]byte(p.After))
		if k != nil && bytes.Equal(k, []byte(p.After)) {
			k, v = c.Next()
		}
	}
	n := 0
	var last string
	for ; k != nil; k, v = step() {
		if v == nil {
			continue // a nested bucket
		}
		if err := ctx.Err(); err != nil {
			return "", err
		}
		if match != nil {
			ok, err := match(v)
			if err != nil {
				return "", fmt.Errorf("decode %s: %w", k, err)
			}
			if !ok {
				continue
			}
		}
		if n == p.Limit {
			// One more record matches: there is a next page.
			return last, nil
		}
		if err := take(k, v); err != nil {
			return "", err
		}
		n++
		last = string(k)
	}
	return "", nil
}

// runFilterFields are the fields of a stored run that RunQuery filters
// on: decoding only them skips the run's configuration, device and engine
// records for the runs a filter drops.
type runFilterFields struct {
	Run struct {
		AgentID string `json:"agent_id"`
		Status  string `json:"status"`
		SweepID string `json:"sweep_id"`
		Source  string `json:"source"`
	} `json:"run"`
}

func (q RunQuery) filters() bool {
	return q.AgentID != "" || q.Status != "" || q.SweepID != "" || q.Source != ""
}

// matcher is the filter of q over stored runs. Every record is written by
// encoding/json (putJSON), so a run with the field holds the field's bytes
// as jsonField writes them: a record without them is dropped without
// decoding, and the others are decoded to be sure (the bytes may stand at
// another level of the record).
func (q RunQuery) matcher() func(v []byte) (bool, error) {
	needles := needlesOf("agent_id", q.AgentID, "status", q.Status, "sweep_id", q.SweepID, "source", q.Source)
	return func(v []byte) (bool, error) {
		if !containsAll(v, needles) {
			return false, nil
		}
		var f runFilterFields
		if err := json.Unmarshal(v, &f); err != nil {
			return false, err
		}
		r := f.Run
		return (q.AgentID == "" || r.AgentID == q.AgentID) && (q.Status == "" || r.Status == q.Status) &&
			(q.SweepID == "" || r.SweepID == q.SweepID) && (q.Source == "" || r.Source == q.Source), nil
	}
}

// jsonField is a field as encoding/json writes it in a record: its name
// and its string value.
func jsonField(name, value string) []byte {
	v, _ := json.Marshal(value) // a string always encodes
	return append([]byte(`"`+name+`":`), v...)
}

// needlesOf is jsonField of each name and value pair whose value is set.
func needlesOf(pairs ...string) [][]byte {
	var out [][]byte
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i+1] != "" {
			out = append(out, jsonField(pairs[i], pairs[i+1]))
		}
	}
	return out
}

func containsAll(v []byte, needles [][]byte) bool {
	for _, n := range needles {
		if !bytes.Contains(v, n) {
			return false
		}
	}
	return true
}

// RunsPage lists one page of the runs matching q in run id order, each
// with its combinations in plan order (and their per-request records when
// q.Requests), and the After of the next page ("" on the last). Only the
// page's runs have their combinations read.
func (s *Store) RunsPage(ctx context.Context, q RunQuery, p Page) ([]protocol.Run, string, error) {
	out := []protocol.Run{}
	var match func([]byte) (bool, error)
	if q.filters() {
		match = q.matcher()
	}
	var next string
	err := s.db.View(func(tx *bolt.Tx) error {
		var err error
		next, err = pageScan(ctx, tx.Bucket(bucketRuns), p, match, func(k, v []byte) error {
			var rec runRecord
			if err := json.Unmarshal(v, &rec); err != nil {
				return fmt.Errorf("decode %s: %w", k, err)
			}
			r := rec.Run
			if err := loadCombinations(tx, &r, q.Requests, !q.NoSeries); err != nil {
				return err
			}
			out = append(out, r)
			return nil
		})
		return err
	})
	if err != nil {
		return nil, "", fmt.Errorf("store: runs: %w", err)
	}
	return out, next, nil
}

// jobFilterFields are the fields of a stored job that JobQuery filters on.
type jobFilterFields struct {
	Job struct {
		SweepID string `json:"sweep_id"`
		AgentID string `json:"agent_id"`
	} `json:"job"`
	State protocol.JobState `json:"state"`
}

// matcher is the filter of q over stored jobs, as RunQuery.matcher.
func (q JobQuery) matcher() func(v []byte) (bool, error) {
	needles := needlesOf("sweep_id", q.SweepID, "agent_id", q.AgentID, "state", string(q.State))
	return func(v []byte) (bool, error) {
		if !containsAll(v, needles) {
			return false, nil
		}
		if st, ok := firstState(v); q.Active && ok && st.Terminal() {
			return false, nil
		}
		var f jobFilterFields
		if err := json.Unmarshal(v, &f); err != nil {
			return false, err
		}
		return q.keeps(f.Job.SweepID, f.Job.AgentID, f.State), nil
	}
}

// firstState is the value of the first "state" field of a stored job: its
// own state, since the job document before it (protocol.Job) has no field
// of that name (TestFirstStateIsTheJobsOwn) and a string value cannot hold
// the bytes unescaped. It lets active=1, which no single value tells, skip
// the ended jobs undecoded.
func firstState(v []byte) (protocol.JobState, bool) {
	const key = `"state":"`
	i := bytes.Index(v, []byte(key))
	if i < 0 {
		return "", false
	}
	rest := v[i+len(key):]
	j := bytes.IndexByte(rest, '"')
	if j < 0 {
		return "", false
	}
	return protocol.JobState(rest[:j]), true
}

func (q JobQuery) keeps(sweep, agent string, state protocol.JobState) bool {
	return (q.SweepID == "" || sweep == q.SweepID) && (q.AgentID == "" || agent == q.AgentID) &&
		(q.State == "" || state == q.State) && (!q.Active || !state.Terminal())
}

// JobsPage lists one page of the jobs matching q in job id order, and the
// After of the next page ("" on the last). A sweep's jobs are read by the
// ids its record lists, not found by a scan of every job.
func (s *Store) JobsPage(ctx context.Context, q JobQuery, p Page) ([]JobRecord, string, error) {
	out := []JobRecord{}
	var next string
	err := s.db.View(func(tx *bolt.Tx) error {
		take := func(k, v []byte) error {
			var j JobRecord
			if err := json.Unmarshal(v, &j); err != nil {
				return fmt.Errorf("decode %s: %w", k, err)
			}
			out = append(out, j)
			return nil
		}
		if q.SweepID != "" {
			var err error
			var ok bool
			next, ok, err = sweepJobsPage(ctx, tx, q, p, take)
			if ok || err != nil {
				return err
			}
		}
		var match func([]byte) (bool, error)
		if q != (JobQuery{}) {
			match = q.matcher()
		}
		var err error
		next, err = pageScan(ctx, tx.Bucket(bucketJobs), p, match, take)
		return err
	})
	if err != nil {
		return nil, "", fmt.Errorf("store: jobs: %w", err)
	}
	return out, next, nil
}

// sweepJobsPage is JobsPage for the jobs of one sweep, read by the ids in
// its record; ok is false when no sweep has q.SweepID, and the caller
// scans instead (a job stored on its own, as a test or an old database
// may have, still names its sweep).
func sweepJobsPage(ctx context.Context, tx *bolt.Tx, q JobQuery, p Page, take func(k, v []byte) error) (next string, ok bool, err error) {
	var sw protocol.Sweep
	found, err := getJSON(tx.Bucket(bucketSweeps), q.SweepID, &sw)
	if err != nil || !found {
		return "", false, err
	}
	ids := slices.Clone(sw.Jobs)
	slices.Sort(ids)
	if p.Newest {
		slices.Reverse(ids)
	}
	jb := tx.Bucket(bucketJobs)
	match := q.matcher()
	n := 0
	var last string
	for _, id := range ids {
		if err := ctx.Err(); err != nil {
			return "", true, err
		}
		if p.After != "" && (!p.Newest && id <= p.After || p.Newest && id >= p.After) {
			continue
		}
		v := jb.Get([]byte(id))
		if v == nil {
			continue
		}
		keep, err := match(v)
		if err != nil {
			return "", true, fmt.Errorf("decode %s: %w", id, err)
		}
		if !keep {
			continue
		}
		if n == p.Limit {
			return last, true, nil
		}
		if err := take([]byte(id), v); err != nil {
			return "", true, err
		}
		n++
		last = id
	}
	return "", true, nil
}

// listInSweep adds job to its sweep's list of jobs when the sweep is
// stored and does not list it.
func listInSweep(tx *bolt.Tx, job protocol.Job) error {
	if job.SweepID == "" {
		return nil
	}
	sb := tx.Bucket(bucketSweeps)
	var sw protocol.Sweep
	found, err := getJSON(sb, job.SweepID, &sw)
	if err != nil || !found || slices.Contains(sw.Jobs, job.ID) {
		return err
	}
	sw.Jobs = append(sw.Jobs, job.ID)
	return putJSON(sb, sw.ID, &sw)
}

// JobsOfSweeps reads the jobs of each sweep by the ids its record lists,
// in one read transaction, oldest first as Jobs orders them; a sweep that
// does not exist has none.
func (s *Store) JobsOfSweeps(ctx context.Context, sweepIDs []string) (map[string][]JobRecord, error) {
	out := make(map[string][]JobRecord, len(sweepIDs))
	err := s.db.View(func(tx *bolt.Tx) error {
		for _, id := range sweepIDs {
			jobs, _, err := jobsOfSweep(ctx, tx, id)
			if err != nil {
				return err
			}
			out[id] = jobs
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: jobs of sweeps: %w", err)
	}
	return out, nil
}

// jobsOfSweep reads every job of the sweep by its record's ids, oldest
// first; ok is false when no sweep has the id.
func jobsOfSweep(ctx context.Context, tx *bolt.Tx, sweepID string) ([]JobRecord, bool, error) {
	var jobs []JobRecord
	_, ok, err := sweepJobsPage(ctx, tx, JobQuery{SweepID: sweepID}, Page{Limit: maxInt}, func(k, v []byte) error {
		var j JobRecord
		if err := json.Unmarshal(v, &j); err != nil {
			return fmt.Errorf("decode %s: %w", k, err)
		}
		jobs = append(jobs, j)
		return nil
	})
	sortJobs(jobs)
	return jobs, ok, err
}

const maxInt = int(^uint(0) >> 1)

// SweepsPage lists one page of the sweeps in the order they were made
// (bucketSweepsByTime), and the After of the next page ("" on the last).
func (s *Store) SweepsPage(ctx context.Context, p Page) ([]protocol.Sweep, string, error) {
	out := []protocol.Sweep{}
	var next string
	err := s.db.View(func(tx *bolt.Tx) error {
		sb := tx.Bucket(bucketSweeps)
		var err error
		next, err = pageScan(ctx, tx.Bucket(bucketSweepsByTime), p, nil, func(_, id []byte) error {
			var sw protocol.Sweep
			if err := getExisting(sb, string(id), &sw); err != nil {
				return fmt.Errorf("sweep %s: %w", id, err)
			}
			out = append(out, sw)
			return nil
		})
		return err
	})
	if err != nil {
		return nil, "", fmt.Errorf("store: sweeps: %w", err)
	}
	return out, next, nil
}

// RejectedPage lists one page of the recorded rejections in the order
// they were recorded (p.Newest: newest first), and the After of the next
// page ("" on the last).
func (s *Store) RejectedPage(ctx context.Context, p Page) ([]Rejection, string, error) {
	out := []Rejection{}
	var next string
	err := s.db.View(func(tx *bolt.Tx) error {
		var err error
		next, err = pageScan(ctx, tx.Bucket(bucketRejected), p, nil, func(k, v []byte) error {
			var r Rejection
			if err := json.Unmarshal(v, &r); err != nil {
				return fmt.Errorf("decode rejection %x: %w", k, err)
			}
			out = append(out, r)
			return nil
		})
		return err
	})
	if err != nil {
		return nil, "", fmt.Errorf("store: rejected: %w", err)
	}
	return out, next, nil
}
