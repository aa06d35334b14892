package live

import (
	"errors"
	"fmt"

	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/controller/store"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// Limits on what one agent's live messages can make the controller keep
// and serve on /api/live. Live messages travel on core NATS, outside the
// events stream's checks, and each is kept in memory until its job ends;
// without bounds, 100 messages of 1 MB from one agent would make /api/live
// 100 MB and the controller take a gigabyte to serve it.
// The sizes are many times what real agents send, measured from the
// agent's own encoders (agent/job.go, agent/telemetry):
const (
	// MaxHeartbeatBytes bounds a heartbeat; a real one is about 180 bytes.
	MaxHeartbeatBytes = 4 << 10
	// maxTelemetryBytes bounds a telemetry sample; one of a 16-GPU host
	// (every GPU's figures under extra, 147 fields) is about 3.5 KB.
	maxTelemetryBytes = 16 << 10
	// maxProgressBytes bounds a progress message: one while measuring is
	// about 370 bytes, but the last one of a failed job carries the
	// failure, with the engine's 8 KiB log tail, which JSON escaping can
	// take to 50 KB.
	maxProgressBytes = 64 << 10

	// maxTelemetryFields bounds the named figures of one sample (extra and
	// rails together), and maxTelemetryThrottle its throttle reasons.
	maxTelemetryFields   = 512
	maxTelemetryThrottle = 64

	// maxProgressMessage is how much of a progress message's text is kept:
	// the live page shows a line, and the job keeps the whole error.
	maxProgressMessage = protocol.MaxLineLen

	// MaxLiveJobsPerAgent is how many jobs of one agent the live progress
	// covers. An agent runs one job at a time; a few allow the next job's
	// progress to arrive before the previous job's end is stored. Past it,
	// the job the agent reported on least recently is dropped.
	MaxLiveJobsPerAgent = 4

	// recentlyEndedKept is how many ended jobs are remembered to refuse a
	// progress message read from the store just before its job ended.
	recentlyEndedKept = 1024
)

// liveJob is a job that live progress names: whose it is and what it
// measures, read from the store once, and its latest progress.
type liveJob struct {
	agent string
	// plan holds the job's combinations; progress for any other is
	// refused, but for a level its search may measure. The zero key is
	// the progress outside any combination (engine start, done).
	plan     map[protocol.ComboKey]bool
	workload protocol.Workload
	// latest is the last progress of each combination, under State.mu.
	latest map[string]protocol.Progress
	// seq orders an agent's jobs by their last progress.
	seq uint64
}

// newLiveJob is the live view of a job the store holds, or why progress
// for it is refused.
func newLiveJob(rec store.JobRecord) (*liveJob, error) {
	if rec.State.Terminal() {
		return nil, fmt.Errorf("job %s has ended (%s)", rec.Job.ID, rec.State)
	}
	if err := rec.Job.Workload.CheckSize(); err != nil {
		// The store may hold a job that a build without the limits took:
		// its plan is not made, whatever it asks.
		return nil, fmt.Errorf("job %s: %w", rec.Job.ID, err)
	}
	j := &liveJob{agent: rec.Job.AgentID, plan: map[protocol.ComboKey]bool{{}: true}, workload: rec.Job.Workload,
		latest: map[string]protocol.Progress{}}
	for _, pc := range rec.Job.Workload.Plan() {
		j.plan[pc.ComboKey] = true
	}
	return j, nil
}

// recentIDs remembers the last n ids added.
type recentIDs struct {
	set  map[string]struct{}
	ring []string
	next int
}

func newRecentIDs(n int) *recentIDs {
	return &recentIDs{set: make(map[string]struct{}, n), ring: make([]string, n)}
}

func (r *recentIDs) add(id string) {
	if _, ok := r.set[id]; ok {
		return
	}
	delete(r.set, r.ring[r.next])
	r.ring[r.next] = id
	r.set[id] = struct{}{}
	r.next = (r.next + 1) % len(r.ring)
}

func (r *recentIDs) has(id string) bool {
	_, ok := r.set[id]
	return ok
}

// checkProgress refuses a progress message whose fields a real agent
// never sends, and cuts its text to what the live page shows.
func checkProgress(p *protocol.Progress) error {
	if err := protocol.ValidateID("job_id", p.JobID); err != nil {
		return err
	}
	switch p.Phase {
	case protocol.PhaseEngineStart, protocol.PhaseWarmup, protocol.PhaseMeasure, protocol.PhaseDone:
	default:
		return fmt.Errorf("phase %.40q: not a phase agents report", p.Phase)
	}
	if err := checkNames(protocol.MaxNameLen, "run_id", p.RunID, "combo.size", p.Combo.Size); err != nil {
		return err
	}
	p.Message = protocol.Clip(p.Message, maxProgressMessage, " …")
	return nil
}

// checkNames refuses the first of the named strings longer than limit.
func checkNames(limit int, fields ...string) error {
	for i := 0; i+1 < len(fields); i += 2 {
		if len(fields[i+1]) > limit {
			return fmt.Errorf("%s: %d bytes, at most %d", fields[i], len(fields[i+1]), limit)
		}
	}
	return nil
}

// checkTelemetry refuses a sample with more named figures than any device
// reports, or names no device uses.
func checkTelemetry(t *protocol.TelemetryTick) error {
	if t.JobID != "" {
		if err := protocol.ValidateID("job_id", t.JobID); err != nil {
			return err
		}
	}
	s := &t.Sample
	if n := len(s.Extra) + len(s.Rails); n > maxTelemetryFields {
		return fmt.Errorf("sample: %d named figures (extra and rails), at most %d", n, maxTelemetryFields)
	}
	if len(s.Throttle) > maxTelemetryThrottle {
		return fmt.Errorf("sample.throttle: %d reasons, at most %d", len(s.Throttle), maxTelemetryThrottle)
	}
	for _, m := range []map[string]float64{s.Extra, s.Rails} {
		for k := range m {
			if len(k) > protocol.MaxNameLen {
				return fmt.Errorf("sample: a figure's name of %d bytes, at most %d", len(k), protocol.MaxNameLen)
			}
		}
	}
	for _, r := range s.Throttle {
		if len(r) > protocol.MaxNameLen {
			return fmt.Errorf("sample.throttle: a reason of %d bytes, at most %d", len(r), protocol.MaxNameLen)
		}
	}
	return nil
}

// liveJobOf is the live view of job id, from the cache or else the
// store, or why progress for it is refused.
func (f *Feed) liveJobOf(id string) (*liveJob, error) {
	if j := f.live.job(id); j != nil {
		return j, nil
	}
	rec, err := f.store.Job(id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("job %s: the controller never made it", id)
	}
	if err != nil {
		return nil, fmt.Errorf("reading job %s to check its agent: %w", id, err)
	}
	return newLiveJob(rec)
}

// takeProgress keeps a progress message of its agent's own open job, for
// a combination of the job's plan or a level its search may measure, and
// passes it to the live views.
func (f *Feed) takeProgress(p protocol.Progress) error {
	if err := checkProgress(&p); err != nil {
		return err
	}
	j, err := f.liveJobOf(p.JobID)
	if err != nil {
		return err
	}
	if j.agent != p.AgentID {
		return fmt.Errorf("job %s is another agent's", p.JobID)
	}
	if !j.plan[p.Combo] && !j.workload.SearchLevel(p.Combo) {
		return fmt.Errorf("combination %.80s is neither in the plan of job %s nor a level its search may measure", p.Combo.String(), p.JobID)
	}
	if err := f.live.putProgress(p, j); err != nil {
		return err
	}
	f.emit(api.EventProgress, p.AgentID, p)
	return nil
}

// takeTelemetry keeps a telemetry sample within the limits and passes it
// to the live views.
func (f *Feed) takeTelemetry(t protocol.TelemetryTick) error {
	if err := checkTelemetry(&t); err != nil {
		return err
	}
	f.live.putTelemetry(t)
	f.emit(api.EventTelemetry, t.AgentID, t)
	return nil
}
