package streams

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/vlmfleet/vlmfleet/controller/ingest"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// Byte limits of the controller's streams. Without them one agent could
// fill the controller's disk: the events stream keeps messages for 30
// days. The events and jobs streams refuse a message that does not fit
// (DiscardNew) rather than drop their oldest, which may not be stored
// yet: a refused agent keeps the message in its spool and sends it again,
// and a refused job stays unpublished and is published again, so nothing
// is lost while a stream is full.
const (
	// DefaultEventsStreamMaxBytes bounds the events stream unless
	// Options.EventsStreamMaxBytes says otherwise.
	DefaultEventsStreamMaxBytes = 8 << 30
	// DefaultJobsStreamMaxBytes bounds the jobs stream unless
	// Options.JobsStreamMaxBytes says otherwise.
	DefaultJobsStreamMaxBytes = 1 << 30
	// AdvisoriesStreamMaxBytes bounds the max-deliveries advisories: about
	// 100,000 of them, which the controller handles as they come.
	AdvisoriesStreamMaxBytes = 64 << 20
	// MinStreamMaxBytes is the smallest limit allowed: four of the largest
	// messages (protocol.MaxMessageBytes).
	MinStreamMaxBytes = 4 * protocol.MaxMessageBytes

	// purgeSettledAt is the share of its limit past which the events stream
	// is freed of the messages the controller has settled (stored, or
	// recorded as rejected). Below it they stay, for an operator to read,
	// until they are 30 days old.
	purgeSettledAt = 0.5
	// streamNearFull is the share of its limit past which /api/health
	// reports a stream.
	streamNearFull = 0.8

	// jetStreamStoreSlack is what the embedded server may store beyond the
	// streams' limits (the consumers' state), should their sum pass 1 TB.
	jetStreamStoreSlack = 256 << 20
)

// CheckLimitOptions refuses a stream limit below MinStreamMaxBytes;
// 0 was made the default before.
func CheckLimitOptions(opt Options) error {
	for _, l := range []struct {
		flag string
		n    int64
	}{{"--events-stream-mib", opt.EventsStreamMaxBytes}, {"--jobs-stream-mib", opt.JobsStreamMaxBytes}} {
		if l.n < MinStreamMaxBytes {
			return fmt.Errorf("controller: %s %d: at least %d (MiB; four of the largest messages)", l.flag, l.n>>20, MinStreamMaxBytes>>20)
		}
	}
	return nil
}

// streamConfigs are the controller's streams as this build and the
// options want them.
func (k *Keeper) streamConfigs() []jetstream.StreamConfig {
	jobs, events, adv := JobsStreamConfig(), EventsStreamConfig(), AdvisoriesStreamConfig()
	jobs.MaxBytes, events.MaxBytes = k.opt.JobsStreamMaxBytes, k.opt.EventsStreamMaxBytes
	out := []jetstream.StreamConfig{jobs, events, adv}
	for i := range out {
		out[i].Replicas = k.opt.StreamReplicas
	}
	return out
}

// JetStreamMaxStore is the embedded server's storage limit, which every
// stream's byte limit is reserved from, as loaded at a start and as
// configured now: its default, three quarters of the disk free at the
// start, refused to create streams of larger limits, to lower a limit
// that was larger and to reload them after a full disk. The streams'
// limits bound what JetStream keeps; a disk smaller than their sum fills
// first, which the controller reports and recovers from (its watchJetStream).
func (k *Keeper) JetStreamMaxStore() int64 {
	return max(k.opt.EventsStreamMaxBytes+k.opt.JobsStreamMaxBytes+AdvisoriesStreamMaxBytes+jetStreamStoreSlack, server.JetStreamMaxStoreDefault)
}

// CheckLimits frees the events stream of what the controller has
// settled once it holds more than purgeSettledAt of its limit, and says
// which streams are near or at their limits, nil when none is.
func (k *Keeper) CheckLimits(ctx context.Context) error {
	var near []string
	for _, name := range []string{protocol.StreamEvents, protocol.StreamJobs, AdvisoriesStream} {
		ictx, cancel := context.WithTimeout(ctx, CheckEvery)
		s, err := k.js.Stream(ictx, name)
		if err == nil && name == protocol.StreamEvents && filled(s.CachedInfo()) > purgeSettledAt {
			if err = k.purgeSettled(ictx, s); err == nil {
				_, err = s.Info(ictx)
			}
		}
		cancel()
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			near = append(near, fmt.Sprintf("%s: %v", name, err))
			continue
		}
		if why := streamFullness(s.CachedInfo()); why != "" {
			near = append(near, why)
		}
	}
	if len(near) == 0 {
		return nil
	}
	return errors.New(strings.Join(near, "; "))
}

// filled is the share of its byte limit a stream holds, 0 without a limit.
func filled(info *jetstream.StreamInfo) float64 {
	if info.Config.MaxBytes <= 0 {
		return 0
	}
	return float64(info.State.Bytes) / float64(info.Config.MaxBytes)
}

// streamFullness says how a stream is near or at its byte limit, "" when
// it is not. A stream that refuses what does not fit is full once the
// largest message no longer fits.
func streamFullness(info *jetstream.StreamInfo) string {
	limit := info.Config.MaxBytes
	if limit <= 0 {
		return ""
	}
	used := int64(info.State.Bytes)
	share := fmt.Sprintf("%s holds %s of its %s limit (%.0f %%)", info.Config.Name, mib(used), mib(limit), 100*filled(info))
	switch {
	case info.Config.Discard == jetstream.DiscardNew && limit-used < int64(info.Config.MaxMsgSize):
		what := "agents keep what is refused and send it again, until the controller has stored what the stream holds"
		if info.Config.Name == protocol.StreamJobs {
			what = "new jobs wait to be published, until agents take the jobs the stream holds"
		}
		return share + ": full, it refuses messages that do not fit: " + what + " (docs/operations.md)"
	case filled(info) >= streamNearFull:
		return share + ": nearly full"
	}
	return ""
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// purgeSettled removes from the events stream every message up to the
// controller's consumer's ack floor: each is stored, or recorded as
// rejected, so only copies go.
func (k *Keeper) purgeSettled(ctx context.Context, s jetstream.Stream) error {
	cons, err := s.Consumer(ctx, ConsumerName)
	if err != nil {
		return fmt.Errorf("reading the controller's consumer to free the stream: %w", err)
	}
	floor := cons.CachedInfo().AckFloor.Stream
	if floor < s.CachedInfo().State.FirstSeq {
		return nil
	}
	if err := s.Purge(ctx, jetstream.WithPurgeSequence(floor+1)); err != nil {
		return fmt.Errorf("removing the stored messages up to sequence %d: %w", floor, err)
	}
	k.log.Info().Str("stream", s.CachedInfo().Config.Name).Uint64("up_to_seq", floor).Str("held", mib(int64(s.CachedInfo().State.Bytes))).
		Msg("removed the messages already stored from the stream to keep it under its byte limit")
	return nil
}

// RemoveRejected deletes a message from the events stream once it is recorded as
// rejected (reject): it would otherwise stay there for 30 days, and an
// agent sending messages that are all refused would fill the disk. Only
// the record's excerpt is kept.
func (k *Keeper) RemoveRejected(msg jetstream.Msg, seq uint64, reason string) {
	md, err := msg.Metadata()
	if err != nil || seq == 0 || md.Stream != protocol.StreamEvents {
		// The advisories stream is a work queue: a terminated message
		// leaves it by itself.
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = errors.New("the events stream is not set up yet")
	if s := k.eventsStream.Load(); s != nil {
		err = (*s).DeleteMsg(ctx, seq)
	}
	if err != nil {
		k.log.Warn().Err(err).Str("stream", md.Stream).Uint64("stream_seq", seq).
			Msg("removing a rejected message from its stream failed; it stays until the stream frees what is settled")
		return
	}
	if agent, _, err := protocol.ParseAgentSubject(msg.Subject()); err == nil {
		k.refuse(agent, RefusalStream, "removed from the events stream after it was rejected: "+ingest.Truncate(reason, 160))
	}
}
