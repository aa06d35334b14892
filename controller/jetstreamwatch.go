package controller

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/vlmfleet/vlmfleet/controller/streams"
	"github.com/vlmfleet/vlmfleet/internal/backoff"
	"github.com/vlmfleet/vlmfleet/internal/tick"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// jetStreamCheckEvery is how often JetStream's health is looked at: a
// stream that can no longer write shows in /api/health within this (and
// well within the 30 s a monitor may expect).
const jetStreamCheckEvery = streams.CheckEvery

// jetStreamRepairPolicy spaces the embedded JetStream's restarts while it
// keeps failing (the disk still nearly full).
var jetStreamRepairPolicy = backoff.Policy{First: jetStreamCheckEvery, Max: time.Minute}

// spaceProbeBytes is what must fit in the store directory before the
// embedded JetStream is restarted: a restart on a disk that is still full
// would only meet the same write error again.
const spaceProbeBytes = 1 << 20

// watchJetStream checks JetStream every jetStreamCheckEvery until ctx
// ends, reports what is wrong in /api/health, and repairs the embedded
// server. Why repair: once a stream of the embedded server fails a write
// (a full disk: "critical write error"), its file store keeps that error
// and refuses every later write, even after space returns; only a new
// file store, that is JetStream restarted, writes again. The messages it
// did not store were never acknowledged, so their publishers (agents, the
// job publisher) send them again with the same message ids.
func (c *Controller) watchJetStream(ctx context.Context) {
	repairs := jetStreamRepairPolicy.Start()
	var notBefore time.Time
	tick.Every(ctx, jetStreamCheckEvery, func() {
		err := c.checkJetStream(ctx)
		if err == nil && c.opt.StreamReplicas > 1 {
			c.reportChange(ProblemReplicas, c.streams.CheckReplicas(ctx),
				"a stream keeps fewer copies than configured: one more NATS node lost may stop its writes",
				"every stream keeps its configured copies again")
		}
		if err == nil {
			c.reportChange(ProblemStreams, c.streams.CheckLimits(ctx),
				"a stream is near or at its byte limit", "every stream is well within its byte limit again")
			if _, was := c.problems.get(ProblemJetStream); was {
				c.log.Warn().Msg("JetStream healthy again")
			}
			c.problems.clear(ProblemJetStream)
			repairs.Reset()
			notBefore = time.Time{}
			return
		}
		if _, was := c.problems.get(ProblemJetStream); !was {
			c.log.Error().Err(err).Msg("JetStream cannot store what agents and the controller publish")
		}
		c.problems.set(ProblemJetStream, err)
		if c.ns == nil || time.Now().Before(notBefore) {
			return // an external server is its operator's to repair
		}
		notBefore = time.Now().Add(repairs.Next())
		if h := c.testHookRepair.Load(); h != nil {
			(*h)("jetstream")
		}
		if rerr := c.repairJetStream(ctx); rerr != nil {
			c.problems.set(ProblemJetStream, fmt.Errorf("%w; not repaired yet: %v", err, rerr))
			c.log.Warn().Err(rerr).Msg("embedded JetStream not restarted yet")
			return
		}
		if err := c.checkJetStream(ctx); err != nil {
			c.problems.set(ProblemJetStream, err)
			return
		}
		c.problems.clear(ProblemJetStream)
		c.log.Warn().Msg("embedded JetStream restarted: the streams write again")
	})
}

// reportChange sets the problem of component to err, or clears it when
// err is nil, and logs when it appears (as appeared says) or goes (gone).
func (c *Controller) reportChange(component string, err error, appeared, gone string) {
	_, was := c.problems.get(component)
	switch {
	case err != nil && !was:
		c.log.Warn().Err(err).Msg(appeared)
	case err == nil && was:
		c.log.Info().Msg(gone)
	}
	if err != nil {
		c.problems.set(component, err)
	} else {
		c.problems.clear(component)
	}
}

// checkJetStream says what is wrong with JetStream, nil when nothing: the
// embedded server is asked directly (enabled, every stream writable), an
// external one through the JetStream API.
func (c *Controller) checkJetStream(ctx context.Context) error {
	if c.ns != nil {
		if !c.ns.JetStreamEnabled() {
			return errors.New("JetStream unavailable: the embedded server has disabled it")
		}
		hs := c.ns.Healthz(&server.HealthzOptions{Details: true})
		if len(hs.Errors) == 0 {
			return nil
		}
		var msgs []string
		for _, e := range hs.Errors {
			msgs = append(msgs, e.Error)
		}
		return fmt.Errorf("JetStream: %s", strings.Join(msgs, "; "))
	}
	ictx, cancel := context.WithTimeout(ctx, jetStreamCheckEvery)
	defer cancel()
	if _, err := c.js.AccountInfo(ictx); err != nil && ctx.Err() == nil {
		return fmt.Errorf("JetStream unavailable on %s: %w", protocol.RedactURL(c.natsURL), err)
	}
	return nil
}

// repairJetStream restarts the embedded server's JetStream once its store
// directory has room again, recreates any missing stream and has the
// durable consumers bind anew.
func (c *Controller) repairJetStream(ctx context.Context) error {
	dir := filepath.Join(c.opt.DataDir, "nats")
	if err := probeSpace(dir, spaceProbeBytes); err != nil {
		return fmt.Errorf("waiting for space in %s: %w", dir, err)
	}
	c.log.Warn().Msg("restarting the embedded JetStream to clear its write error")
	if err := c.ns.ShutdownJetStream(); err != nil {
		return fmt.Errorf("stop JetStream: %w", err)
	}
	// What the server's own start passes (serverOptions sets the storage limit).
	cfg := &server.JetStreamConfig{StoreDir: dir, Strict: true, CompressOK: true, MaxStore: c.streams.JetStreamMaxStore()}
	if err := c.ns.EnableJetStream(cfg); err != nil {
		return fmt.Errorf("start JetStream: %w", err)
	}
	if err := c.streams.Ensure(ctx); err != nil {
		return err
	}
	for _, b := range c.consumers {
		b.ForceRebind(errors.New("JetStream was restarted"))
	}
	return nil
}

// probeSpace writes and removes a file of n bytes in dir: whether a
// write of that size succeeds there now.
func probeSpace(dir string, n int) error {
	f, err := os.CreateTemp(dir, ".space-probe-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	_, err = f.Write(make([]byte, n))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
