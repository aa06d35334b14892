package controller

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// startLive subscribes to the live-only subjects on core NATS.
func (c *Controller) startLive() error {
	handlers := map[string]nats.MsgHandler{
		protocol.KindHeartbeat: c.heartbeatHandler(),
		protocol.KindProgress:  c.feed.ProgressHandler(),
		protocol.KindTelemetry: c.feed.TelemetryHandler(),
	}
	for _, kind := range []string{protocol.KindHeartbeat, protocol.KindProgress, protocol.KindTelemetry} {
		sub, err := c.nc.Subscribe(protocol.AgentSubjectAll(kind), handlers[kind])
		if err != nil {
			return fmt.Errorf("controller: subscribe %s: %w", protocol.AgentSubjectAll(kind), err)
		}
		// Live views prefer dropping to stalling the connection.
		_ = sub.SetPendingLimits(65536, 64<<20)
		c.subs = append(c.subs, sub)
	}
	if err := c.nc.Flush(); err != nil {
		return fmt.Errorf("controller: flush subscriptions: %w", err)
	}
	return nil
}

func (c *Controller) onHeartbeat(hb protocol.Heartbeat) {
	now := time.Now().UTC()
	c.metrics.heartbeats.Inc()
	if !hb.Time.IsZero() {
		c.metrics.heartbeatDelay.Observe(max(0, now.Sub(hb.Time).Seconds()))
	}
	state := hb.State
	if state == "" {
		state = protocol.AgentIdle
	}
	if persist := c.live.Seen(hb.AgentID, now, state, hb.JobID); persist {
		c.live.Touch(hb.AgentID, now)
	}
	c.live.SetPower(hb.AgentID, hb.PowerMode, hb.PowerLimitW)
	c.reconcileDrain(hb)
	c.emit(api.EventHeartbeat, hb.AgentID, hb)
}

// watchAgents announces agents going online or offline as "agent" events,
// and persists the last-seen times due, in one transaction a second.
func (c *Controller) watchAgents(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			if seen := c.live.TakeTouched(); seen != nil {
				if err := c.store.TouchAgents(seen); err != nil {
					c.log.Warn().Err(err).Msg("persisting last-seen failed")
				}
			}
			for _, id := range c.live.Transitions(now, c.opt.HeartbeatTimeout) {
				if v, err := c.agentView(id); err == nil {
					c.emit(api.EventAgent, id, v)
				}
			}
		}
	}
}
