package jobs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/controller/ingest"
	"github.com/vlmfleet/vlmfleet/controller/store"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// MaxDeliverAdvisoryType is the schema type of JetStream's advisory that
// an agent's job consumer gave up on a job.
const MaxDeliverAdvisoryType = "io.nats.jetstream.advisory.v1.max_deliver"

// maxDeliveriesAdvisory is the part of JetStream's advisory the controller
// reads (nats-server's JSConsumerDeliveryExceededAdvisory).
type maxDeliveriesAdvisory struct {
	Type       string    `json:"type"`
	Time       time.Time `json:"timestamp"`
	Stream     string    `json:"stream"`
	Consumer   string    `json:"consumer"`
	StreamSeq  uint64    `json:"stream_seq"`
	Deliveries uint64    `json:"deliveries"`
}

// decodeMaxDeliveries reads an advisory and returns the agent whose job
// consumer gave up. Fields this build does not read (id, domain) are allowed.
func decodeMaxDeliveries(data []byte) (maxDeliveriesAdvisory, string, error) {
	var a maxDeliveriesAdvisory
	if err := decodeOne(data, &a); err != nil {
		return a, "", fmt.Errorf("max-deliveries advisory: %w", err)
	}
	if a.Type != MaxDeliverAdvisoryType {
		return a, "", fmt.Errorf("max-deliveries advisory: type %q, want %q", a.Type, MaxDeliverAdvisoryType)
	}
	if a.Stream != protocol.StreamJobs {
		return a, "", fmt.Errorf("max-deliveries advisory: stream %q, want %q", a.Stream, protocol.StreamJobs)
	}
	agentID, ok := strings.CutPrefix(a.Consumer, protocol.JobConsumerName(""))
	if !ok || protocol.ValidateAgentID(agentID) != nil || protocol.JobConsumerName(agentID) != a.Consumer {
		return a, "", fmt.Errorf("max-deliveries advisory: consumer %q is not an agent's job consumer %q", a.Consumer, protocol.JobConsumerName("<agent id>"))
	}
	if a.StreamSeq == 0 {
		return a, "", errors.New("max-deliveries advisory: stream_seq is 0 or missing")
	}
	if a.Deliveries == 0 {
		return a, "", errors.New("max-deliveries advisory: deliveries is 0 or missing")
	}
	return a, agentID, nil
}

// HandleAdvisory settles one message of the advisories stream: the job it
// names is failed (jobUndeliverable), a malformed one is rejected.
func (sc *Scheduler) HandleAdvisory(msg jetstream.Msg) {
	var seq uint64
	var delivered uint64 = 1
	if md, err := msg.Metadata(); err == nil {
		seq, delivered = md.Sequence.Stream, md.NumDelivered
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := sc.jobUndeliverable(ctx, msg.Data())
	switch d := ingest.Settle(err, delivered); d.Action {
	case ingest.Ack:
		if aerr := msg.Ack(); aerr != nil {
			sc.log.Warn().Err(aerr).Msg("ack of a max-deliveries advisory failed; handling it again is harmless")
		}
	case ingest.Reject:
		sc.ingester.Reject(msg, seq, d.Reason)
	default:
		sc.log.Error().Err(err).Uint64("delivery", delivered).Dur("retry_in", d.Delay).Msg("handling a max-deliveries advisory failed")
		_ = msg.NakWithDelay(d.Delay)
	}
}

// jobUndeliverable marks failed the job an advisory says JetStream gave up
// delivering, unless the job already ended, and removes it from the jobs
// stream, where it would otherwise wait for its age limit.
func (sc *Scheduler) jobUndeliverable(ctx context.Context, data []byte) error {
	adv, agentID, err := decodeMaxDeliveries(data)
	if err != nil {
		return store.Rejectf("%v", err)
	}
	job, inStream, err := sc.undeliveredJob(ctx, adv, agentID)
	if errors.Is(err, store.ErrNotFound) {
		sc.log.Warn().Str("agent", agentID).Uint64("stream_seq", adv.StreamSeq).Msg("JetStream gave up delivering a job this controller does not know")
		return nil
	}
	if err != nil {
		return err
	}
	at := adv.Time
	if at.IsZero() {
		at = time.Now().UTC()
	}
	ch := protocol.JobStateChange{
		Schema: protocol.SchemaVersion, JobID: job.ID, SweepID: job.SweepID, AgentID: agentID,
		State: protocol.JobFailed, Time: at, Attempt: int(min(adv.Deliveries, 1<<20)),
		Error: fmt.Sprintf("delivered %d times; the agent never finished it (it stopped or crashed each time)", adv.Deliveries),
	}
	rec, changed, err := sc.store.FailJob(ch, time.Now().UTC())
	if errors.Is(err, store.ErrNotFound) {
		sc.log.Warn().Str("job", job.ID).Str("agent", agentID).Msg("JetStream gave up delivering a job this controller does not know")
	} else if err != nil {
		return err
	}
	if inStream {
		// The consumer never delivers it again; deleting it keeps a
		// recreated consumer from running a job already declared over.
		if err := sc.DeleteJobMsg(ctx, adv.StreamSeq); err != nil {
			sc.log.Warn().Err(err).Str("job", job.ID).Msg("removing an undeliverable job from the stream failed; it stays until its age limit")
		}
	}
	if changed {
		ch.RunID = rec.RunID
		sc.live.JobEnded(job.ID)
		sc.emit(api.EventState, agentID, ch)
		sc.log.Warn().Str("job", job.ID).Str("agent", agentID).Uint64("deliveries", adv.Deliveries).Msg("job failed: JetStream gave up delivering it")
	}
	return nil
}

// undeliveredJob finds the job at the advisory's stream sequence: in the
// jobs stream, which keeps a message its consumer gave up on, or else by the
// sequence recorded when the job was published.
func (sc *Scheduler) undeliveredJob(ctx context.Context, adv maxDeliveriesAdvisory, agentID string) (protocol.Job, bool, error) {
	stream, err := sc.js.Stream(ctx, protocol.StreamJobs)
	if err != nil {
		return protocol.Job{}, false, fmt.Errorf("jobs stream: %w", err)
	}
	raw, err := stream.GetMsg(ctx, adv.StreamSeq)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		rec, err := sc.store.JobByStreamSeq(ctx, agentID, adv.StreamSeq)
		if err != nil {
			return protocol.Job{}, false, err
		}
		return rec.Job, false, nil
	}
	if err != nil {
		return protocol.Job{}, false, fmt.Errorf("jobs stream message %d: %w", adv.StreamSeq, err)
	}
	if raw.Subject != protocol.JobSubject(agentID) {
		return protocol.Job{}, false, store.Rejectf("max-deliveries advisory of consumer %s: jobs stream message %d is on %s, not %s", adv.Consumer, adv.StreamSeq, raw.Subject, protocol.JobSubject(agentID))
	}
	job, err := protocol.DecodeJob(raw.Data)
	if err != nil {
		return protocol.Job{}, false, store.Rejectf("jobs stream message %d: %v", adv.StreamSeq, err)
	}
	if job.AgentID != agentID {
		return protocol.Job{}, false, store.Rejectf("jobs stream message %d on %s names agent %q", adv.StreamSeq, raw.Subject, job.AgentID)
	}
	return *job, true, nil
}

// DeleteJobMsg removes message seq from the jobs stream; one already gone
// is no error.
func (sc *Scheduler) DeleteJobMsg(ctx context.Context, seq uint64) error {
	stream, err := sc.js.Stream(ctx, protocol.StreamJobs)
	if err != nil {
		return fmt.Errorf("jobs stream: %w", err)
	}
	err = stream.DeleteMsg(ctx, seq)
	if err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
		// The server refuses to delete a message it does not hold with a
		// generic failure whose code says nothing of why ("sequence not
		// found", "stream store EOF"): a job's agent may take and
		// acknowledge it between a check and the deletion. Gone is what
		// the deletion wanted.
		if _, gerr := stream.GetMsg(ctx, seq); errors.Is(gerr, jetstream.ErrMsgNotFound) {
			return nil
		}
		return fmt.Errorf("delete jobs stream message %d: %w", seq, err)
	}
	return nil
}

// decodeOne decodes exactly one JSON document, naming line and column of a
// syntax or type error.
func decodeOne(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(v); err != nil {
		return protocol.DescribeJSONError(data, dec.InputOffset(), err)
	}
	if dec.More() {
		return errors.New("trailing data after the JSON document")
	}
	return nil
}
