package agent

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// handshake asks the controller, before the agent fetches its first job
// and whenever it finds no job consumer, what it must know of it: whether
// the agent is drained (one drained while it was stopped takes no job
// before it learns so), which encodings of result messages the controller
// takes, and whether the controller makes the agent's job consumer (it
// does so before it answers). The question is a heartbeat sent
// as a request; the answer is a protocol.Drain carrying Encodings. No
// answer (a controller that does not know the agent yet) leaves the agent
// taking jobs and sending results as JSON; later drains come on the
// control subject. It says whether the controller refused this process.
func (a *Agent) handshake(ctx context.Context) (refused bool) {
	a.mu.Lock()
	a.seq++
	hb := protocol.Heartbeat{Schema: protocol.SchemaVersion, AgentID: a.cfg.ID, Time: time.Now(), State: a.state, Seq: a.seq,
		Instance: a.instance, SpoolLock: a.spoolLock}
	a.mu.Unlock()
	data, err := json.Marshal(hb)
	if err != nil {
		return false
	}
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	reply, err := a.nc.RequestWithContext(rctx, protocol.AgentSubject(a.cfg.ID, protocol.KindHeartbeat), data)
	if err != nil {
		a.log.Debug().Err(err).Msg("no answer to the handshake; taking jobs and sending results uncompressed")
		return false
	}
	_, d, err := protocol.DecodeControl(reply.Data)
	if err != nil || d == nil {
		a.log.Warn().Err(err).Msg("ignoring a malformed answer to the handshake")
		return false
	}
	a.agree(d)
	return d.Refused != ""
}

// agree takes the controller's answer to the handshake. A refusal (another
// process runs with the agent's id) stops the agent with the controller's
// reason.
func (a *Agent) agree(answer *protocol.Drain) {
	if answer.Refused != "" {
		a.log.Error().Str("reason", answer.Refused).Msg("the controller refused this process: another runs with its id")
		if a.refuse != nil {
			a.refuse(&DuplicateError{AgentID: a.cfg.ID, Reason: answer.Refused})
		}
		return
	}
	a.setDrained(answer.Drained)
	a.wire.accept(answer.Encodings)
	a.makesOwnConsumer.Store(!answer.JobConsumer)
}

// wireEncoding is how spooled messages go on the wire. The spool keeps
// them as JSON; results go compressed (protocol.EncodingS2) only to a
// controller that said in the handshake that it takes them, so a
// controller from before gets JSON. It is decided at each send, not when a
// message is spooled: what was spooled before the answer (by a previous
// run of the agent too) goes as the controller takes it now.
type wireEncoding struct {
	compressResults atomic.Bool
}

// accept records the encodings the controller named in the handshake.
func (w *wireEncoding) accept(encodings []string) {
	w.compressResults.Store(slices.Contains(encodings, protocol.EncodingS2))
}

// encode is a spooled message as it is sent on subject.
func (w *wireEncoding) encode(subject string, data []byte) []byte {
	if w.compressResults.Load() && strings.HasSuffix(subject, "."+protocol.KindResult) {
		return protocol.CompressPayload(data)
	}
	return data
}
