package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/controller/ingest"
	"github.com/vlmfleet/vlmfleet/controller/live"
	"github.com/vlmfleet/vlmfleet/controller/store"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// DrainAgent drains the agent (drained true) or takes it back: a drained
// agent gets no new jobs from new sweeps and is told, on its control
// subject, to finish its current job and fetch no more. The drain is
// stored, so it outlives a restart of the controller or the agent.
func (c *Controller) DrainAgent(_ context.Context, id string, drained bool) (api.AgentView, error) {
	if err := protocol.ValidateAgentID(id); err != nil {
		return api.AgentView{}, &requestError{http.StatusBadRequest, err}
	}
	a, err := c.store.SetDrained(id, drained, time.Now().UTC())
	if err != nil {
		return api.AgentView{}, err
	}
	// Known to the heartbeats' check before the agent can hear of it, so
	// that a heartbeat saying so is not taken for one that disagrees.
	c.live.SetStoredDrain(id, drained)
	c.sendDrain(id, drained)
	v := c.statusOf(a, time.Now()).AgentView
	c.log.Info().Str("agent", id).Bool("drained", drained).Msg("agent drain changed")
	c.emit(api.EventAgent, id, v)
	return v, nil
}

// sendDrain tells the agent its drain on core NATS; a lost message is
// repeated by reconcileDrain at the agent's next heartbeat.
func (c *Controller) sendDrain(id string, drained bool) {
	data, err := json.Marshal(protocol.Drain{Schema: protocol.SchemaVersion, Drained: drained})
	if err != nil {
		c.log.Error().Err(err).Msg("encode drain")
		return
	}
	if err := c.nc.Publish(protocol.ControlSubject(id), data); err != nil {
		c.log.Warn().Err(err).Str("agent", id).Msg("sending a drain failed")
	}
}

// reconcileDrain repeats the stored drain to an agent whose heartbeat says
// otherwise (it was offline, restarted, or the message was lost), and
// records what the heartbeats say.
//
// The stored drain is read from the store once per agent and then kept in
// memory (DrainAgent, its only writer, updates both): reading and decoding
// the agent's record at every heartbeat was a fifth of an idle controller's
// CPU at 1,000 agents.
func (c *Controller) reconcileDrain(hb protocol.Heartbeat) {
	c.live.SetDrained(hb.AgentID, hb.Drained)
	stored, known := c.live.StoredDrain(hb.AgentID)
	if !known {
		a, err := c.store.Agent(hb.AgentID)
		if err != nil {
			return // not announced yet (never drained), or unreadable: next time
		}
		stored = c.live.LearnStoredDrain(hb.AgentID, a.Drained)
	}
	if stored != hb.Drained {
		c.sendDrain(hb.AgentID, stored)
	}
}

// heartbeatHandler takes in heartbeats. One from a process that the
// controller refuses for its agent id (another holds it) is counted as a
// refusal and leaves the agent's state alone; sent as a request, it is
// answered with the refusal, and the agent stops. The holder's last
// heartbeat (stopping) lets the id go to the next process, and is
// answered once it has. One taken in and sent
// as a request (an agent's first, before it fetches a job, and one
// whenever it finds no job consumer) is answered, on the agent's own inbox
// only (replyTo), once the agent's job consumer is made, with the agent's
// stored drain, so that an agent drained while it was away takes no job
// before it learns so. The reply subject is checked here, before the next
// heartbeat is read; the answer is sent aside (answerLater).
func (c *Controller) heartbeatHandler() nats.MsgHandler {
	return func(m *nats.Msg) {
		var hb protocol.Heartbeat
		agent, err := live.Decode(m.Subject, m.Data, live.MaxHeartbeatBytes, &hb, func(h *protocol.Heartbeat) (string, int) { return h.AgentID, h.Schema })
		if err != nil {
			c.refuse(agent, RefusalHeartbeat, ingest.Truncate(err.Error(), 200))
			return
		}
		now := time.Now().UTC()
		holder, verdict := c.claimInstance(hb.AgentID, instanceClaim{instance: hb.Instance, spoolLock: hb.SpoolLock}, now)
		switch verdict {
		case claimRefused:
			refusal := duplicateRefusal(hb.AgentID, holder, now)
			c.refuse(hb.AgentID, RefusalDuplicate, refusal)
			c.answerRefusal(m, refusal)
			return
		case claimStale:
			if hb.Stopping {
				c.answerStopping(m)
			}
			return
		}
		c.onHeartbeat(hb)
		if hb.Stopping {
			c.instances.release(hb.AgentID, hb.Instance)
			c.answerStopping(m)
			return
		}
		if m.Reply == "" {
			return
		}
		id, reply, ok := c.replyTo(m)
		if !ok {
			return
		}
		c.answerLater(func(ctx context.Context) { c.answerFirstHeartbeat(ctx, id, reply) })
	}
}

// answerStopping answers a process's last heartbeat, once its id is let
// go: the process waits for it, so that the next one started is not taken
// for a second.
func (c *Controller) answerStopping(m *nats.Msg) {
	if m.Reply == "" {
		return
	}
	id, reply, ok := c.replyTo(m)
	if !ok {
		return
	}
	data, err := json.Marshal(protocol.Drain{Schema: protocol.SchemaVersion})
	if err == nil {
		err = c.nc.Publish(reply, data)
	}
	if err != nil {
		c.log.Warn().Err(err).Str("agent", id).Msg("answering an agent's last heartbeat failed")
	}
}

// answerRefusal answers a refused process's heartbeat request, on its
// own inbox only, with why it is refused.
func (c *Controller) answerRefusal(m *nats.Msg, refusal string) {
	if m.Reply == "" {
		return
	}
	id, reply, ok := c.replyTo(m)
	if !ok {
		return
	}
	data, err := json.Marshal(protocol.Drain{Schema: protocol.SchemaVersion, Refused: refusal})
	if err == nil {
		err = c.nc.Publish(reply, data)
	}
	if err != nil {
		c.log.Warn().Err(err).Str("agent", id).Msg("answering a refused process of an agent failed")
	}
}

// answerFirstHeartbeat makes agent id's job consumer and answers on reply
// with its drain. A consumer that could not be made is asked for again by
// the agent, which finds none.
func (c *Controller) answerFirstHeartbeat(ctx context.Context, id, reply string) {
	if err := c.ensureJobConsumer(ctx, id); err != nil && ctx.Err() == nil {
		c.log.Warn().Err(err).Str("agent", id).Msg("making the agent's job consumer failed; the agent asks again")
	}
	// An agent whose hello is not stored yet was never drained.
	a, err := c.store.Agent(id)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		c.log.Warn().Err(err).Str("agent", id).Msg("reading the agent's drain failed; its first heartbeat goes unanswered")
		return
	}
	// The answer also says that this controller takes compressed results
	// and makes the agent's job consumer.
	data, err := json.Marshal(protocol.Drain{Schema: protocol.SchemaVersion, Drained: a.Drained,
		Encodings: []string{protocol.EncodingS2}, JobConsumer: true})
	if err == nil {
		err = c.nc.Publish(reply, data)
	}
	if err != nil {
		c.log.Warn().Err(err).Str("agent", id).Msg("answering a heartbeat with the drain failed")
	}
}

// handleDrain serves POST (drain) and DELETE (take back) on one route.
func (c *Controller) handleDrain(r *http.Request) (api.AgentView, error) {
	switch r.Method {
	case http.MethodPost, http.MethodDelete:
		return c.DrainAgent(r.Context(), r.PathValue("id"), r.Method == http.MethodPost)
	}
	return api.AgentView{}, &requestError{http.StatusMethodNotAllowed,
		fmt.Errorf("%s %s: want POST to drain the agent or DELETE to take it back", r.Method, r.URL.Path)}
}
