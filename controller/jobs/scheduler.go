package jobs

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/controller/store"
	"github.com/vlmfleet/vlmfleet/controller/sweepfile"
	"github.com/vlmfleet/vlmfleet/internal/backoff"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// NewID makes a sortable, unique id: prefix-YYYYMMDD-HHMMSS-<8 hex>.
func NewID(prefix string, now time.Time) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return prefix + "-" + now.UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:])
}

// SubmitSweep checks the sweep in two steps, what it says about itself
// (sweepfile.Check, which the CLI and the API take too) and then against
// the fleet (fitToFleet), and stores its jobs queued and publishes them.
func (sc *Scheduler) SubmitSweep(ctx context.Context, s protocol.Sweep) (protocol.Sweep, error) {
	if err := sweepfile.Check(s); err != nil {
		return protocol.Sweep{}, err
	}
	now := time.Now().UTC()
	s.ID = NewID("sw", now)
	s.CreatedAt = now
	jobs, err := sc.fitToFleet(ctx, &s, now)
	if err != nil {
		return protocol.Sweep{}, err
	}
	if err := sc.store.CreateSweep(s, jobs); err != nil {
		return protocol.Sweep{}, fmt.Errorf("controller: %w", err)
	}
	sc.log.Info().Str("sweep", s.ID).Int("jobs", len(jobs)).Int("skipped_agents", len(s.Skipped)).Msg("sweep submitted")
	if _, err := sc.publishJobs(ctx, jobs); err != nil {
		// Stored as unpublished: the publisher retries with backoff.
		sc.log.Warn().Err(err).Str("sweep", s.ID).Msg("publishing jobs failed; will retry")
		sc.KickPublisher()
	}
	return s, nil
}

// fitToFleet is the second step of checking a sweep, the one only the
// controller can take, from the agents' announcements: it makes one job
// per selected agent, selected deployment that agent offers and power
// setting of the sweep that applies to it (planJobs), and lists them, the
// agents skipped and the notes in s. With no agents named, the agents
// online now are used; named agents get their jobs even when offline (the
// jobs wait in JetStream). It refuses, with an *api.BadSweepError, an
// agent that never announced itself or cannot take jobs, and a sweep of
// which nothing selected is offered.
func (sc *Scheduler) fitToFleet(ctx context.Context, s *protocol.Sweep, now time.Time) ([]store.JobRecord, error) {
	agents, err := sc.agentStatuses(ctx)
	if err != nil {
		return nil, fmt.Errorf("controller: sweep: %w", err)
	}
	byID := map[string]AgentStatus{}
	for _, a := range agents {
		byID[a.ID] = a
	}
	var chosen []AgentStatus
	var skipped []protocol.SkippedAgent
	if len(s.Agents) == 0 {
		if chosen, skipped, err = sc.selectOnline(agents, s.AgentLabels); err != nil {
			return nil, err
		}
	} else {
		for i, id := range s.Agents {
			a, ok := byID[id]
			if !ok {
				return nil, api.BadSweepf("agents[%d]: agent %q has never announced itself to this controller", i, id)
			}
			if slices.ContainsFunc(chosen, func(x AgentStatus) bool { return x.ID == id }) {
				continue
			}
			if a.Drained {
				return nil, drainedRefusal(i, id)
			}
			if a.Upgrade != nil {
				return nil, upgradeRefusal(i, id, a.Upgrade)
			}
			if !protocol.LabelsMatch(a.Labels, s.AgentLabels) {
				return nil, api.BadSweepf("agents[%d]: agent %q does not carry agent_labels %s (its labels: %s)",
					i, id, formatLabels(s.AgentLabels), formatLabels(a.Labels))
			}
			if !a.Online {
				sc.log.Warn().Str("agent", id).Msg("sweep names an offline agent; its jobs wait until it returns")
			}
			chosen = append(chosen, a)
		}
	}
	s.Jobs, s.Skipped, s.Notes = nil, skipped, nil
	jobs, err := planJobs(s, chosen, now)
	if err != nil {
		return nil, err
	}
	skipIdle(s, chosen, jobs)
	return jobs, nil
}

// planJobs makes sweep s's jobs, one per chosen agent, deployment it
// offers (of those s selects) and power setting that applies to it
// (planPower, whose notes it keeps in s), and lists them in s: an agent's
// jobs go deployment by deployment, each in the settings in the sweep's
// order, so that the modes of one deployment are measured back to back. A
// deployment s names that no chosen agent offers, a power setting planPower
// refuses, or no job at all, is refused with why, before any job is stored.
func planJobs(s *protocol.Sweep, chosen []AgentStatus, now time.Time) ([]store.JobRecord, error) {
	offered := map[string]bool{}
	deployments := map[string][]string{}
	var working []AgentStatus
	for _, a := range chosen {
		for _, d := range a.Deployments {
			if len(s.Deployments) > 0 && !slices.Contains(s.Deployments, d.ID) {
				continue
			}
			offered[d.ID] = true
			deployments[a.ID] = append(deployments[a.ID], d.ID)
		}
		if len(deployments[a.ID]) > 0 {
			working = append(working, a)
		}
	}
	for i, d := range s.Deployments {
		if !offered[d] {
			if why := brokenReasons(chosen, d); why != "" {
				return nil, api.BadSweepf("deployments[%d]: %q cannot run: %s", i, d, why)
			}
			return nil, api.BadSweepf("deployments[%d]: %q is offered by none of the selected agents (%s); they offer: %s", i, d, agentIDs(chosen), strings.Join(slices.Sorted(maps.Keys(offeredIDs(chosen))), ", "))
		}
	}
	if len(working) == 0 {
		if why := brokenReasons(chosen, ""); why != "" {
			return nil, api.BadSweepf("the selected agents (%s) offer no deployment: %s", agentIDs(chosen), why)
		}
		return nil, api.BadSweepf("the selected agents (%s) offer no deployment", agentIDs(chosen))
	}
	power, err := planPower(sweepPowerAxis(s), working)
	if err != nil {
		return nil, err
	}
	s.Notes = power.notes
	var jobs []store.JobRecord
	for _, a := range working {
		for _, d := range deployments[a.ID] {
			for _, p := range power.settings[a.ID] {
				jobs = append(jobs, newJob(s, len(jobs)+1, a.ID, d, p, now))
				s.Jobs = append(s.Jobs, jobs[len(jobs)-1].Job.ID)
			}
		}
	}
	return jobs, nil
}

// newJob is the n-th job of sweep s, queued: deployment d on agent in
// power setting p.
func newJob(s *protocol.Sweep, n int, agent, d string, p protocol.PowerSetting, now time.Time) store.JobRecord {
	return store.JobRecord{
		Job: protocol.Job{
			Schema: protocol.SchemaVersion, ID: fmt.Sprintf("%s-j%d", s.ID, n), SweepID: s.ID, AgentID: agent,
			Deployment: d, Workload: s.Workload, CreatedAt: now, Power: p,
		},
		State:     protocol.JobQueued,
		UpdatedAt: now,
	}
}

// brokenReasons says why the agents cannot run deployment id (every broken
// deployment when id is empty), from their announcements: "agent a1: its
// configuration is wrong: deployments[1].engine: ...".
func brokenReasons(as []AgentStatus, id string) string {
	var why []string
	for _, a := range as {
		for _, b := range a.BrokenDeployments {
			if id == "" || b.ID == id {
				why = append(why, fmt.Sprintf("on agent %s its configuration is wrong: %s", a.ID, b.Reason))
			}
		}
	}
	return strings.Join(why, "; ")
}

// offeredIDs is every deployment id the agents offer, for an error that
// says what a sweep may select.
func offeredIDs(as []AgentStatus) map[string]bool {
	ids := map[string]bool{}
	for _, a := range as {
		for _, d := range a.Deployments {
			ids[d.ID] = true
		}
	}
	return ids
}

func agentIDs(as []AgentStatus) string {
	ids := make([]string, len(as))
	for i, a := range as {
		ids[i] = a.ID
	}
	return strings.Join(ids, ", ")
}

// publishJobs publishes stored jobs with their message ids, waits for
// JetStream's acknowledgements and marks the acknowledged jobs published;
// it returns their ids. Every publish is sent before any acknowledgement is
// awaited, and the marks are one store transaction: one job at a time, each
// waiting for its acknowledgement and its own commit, a sweep over 200
// agents did not finish its POST in 3 minutes on a busy host. Publishing
// again is harmless: the stream drops a duplicate id within its window, and
// a duplicate's acknowledgement carries the sequence of the stored original.
func (sc *Scheduler) publishJobs(ctx context.Context, jobs []store.JobRecord) ([]string, error) {
	pctx, cancel := context.WithTimeout(ctx, publishTimeout)
	defer cancel()
	type sent struct {
		id  string
		ack jetstream.PubAckFuture
	}
	var pending []sent
	var errs []error
	for _, j := range jobs {
		if err := j.Job.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("job %s: %w", j.Job.ID, err))
			continue
		}
		data, err := json.Marshal(j.Job)
		if err != nil {
			errs = append(errs, fmt.Errorf("job %s: encode: %w", j.Job.ID, err))
			continue
		}
		// The expected stream is stored with the job and delivered with
		// it: a stream other than the jobs stream that the delivery reaches
		// (an agent can name any reply subject in a pull) refuses it.
		ack, err := sc.js.PublishAsync(protocol.JobSubject(j.Job.AgentID), data, jetstream.WithMsgID(protocol.JobMsgID(j.Job.ID)),
			jetstream.WithExpectStream(protocol.StreamJobs))
		if err != nil {
			errs = append(errs, fmt.Errorf("job %s: publish: %w", j.Job.ID, err))
			continue
		}
		pending = append(pending, sent{j.Job.ID, ack})
	}
	seqs := map[string]uint64{}
	for _, p := range pending {
		select {
		case ack := <-p.ack.Ok():
			seqs[p.id] = ack.Sequence
		case err := <-p.ack.Err():
			errs = append(errs, fmt.Errorf("job %s: publish: %w", p.id, err))
		case <-pctx.Done():
			errs = append(errs, fmt.Errorf("job %s: publish: no acknowledgement: %w", p.id, pctx.Err()))
		}
	}
	if len(seqs) == 0 {
		return nil, errors.Join(errs...)
	}
	if err := sc.store.MarkPublished(time.Now().UTC(), seqs); err != nil {
		return nil, errors.Join(append(errs, err)...)
	}
	return slices.Sorted(maps.Keys(seqs)), errors.Join(errs...)
}

// publishTimeout bounds how long a batch of publishes waits for JetStream's
// acknowledgements.
const publishTimeout = 30 * time.Second

// KickPublisher has PublishLoop try the stored, unpublished jobs now.
func (sc *Scheduler) KickPublisher() {
	select {
	case sc.publishKick <- struct{}{}:
	default:
	}
}

// PublishLoop publishes jobs that are stored but unacknowledged, after a
// start or a failed publish, backing off from half a second to a minute
// while JetStream refuses. A kick (a new sweep's failed publish) tries at
// once rather than waiting out the backoff, so it does not sleep in Wait.
func (sc *Scheduler) PublishLoop(ctx context.Context) {
	b := backoff.Policy{First: 500 * time.Millisecond, Max: time.Minute}.Start()
	var retry <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-sc.publishKick:
		case <-retry:
		}
		retry = nil
		if err := sc.publishPending(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			delay := b.Next()
			sc.hooks.PublishFailing(fmt.Errorf("jobs wait to be published: %w", err))
			sc.log.Warn().Err(err).Dur("retry_in", delay).Msg("publishing stored jobs failed")
			retry = time.After(delay)
			continue
		}
		sc.hooks.PublishFailing(nil)
		b.Reset()
	}
}

func (sc *Scheduler) publishPending(ctx context.Context) error {
	jobs, err := sc.store.UnpublishedJobs(ctx)
	if err != nil {
		return err
	}
	if len(jobs) == 0 {
		return nil
	}
	ids, err := sc.publishJobs(ctx, jobs)
	if len(ids) > 0 {
		sc.log.Info().Int("jobs", len(ids)).Strs("ids", ids).Msg("published stored jobs")
	}
	return err
}
