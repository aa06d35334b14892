// Package agent runs on each lab device: it announces the device and the
// deployments its local configuration offers, takes the jobs addressed to it
// from JetStream, measures them and publishes progress and results.
package agent

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/vlmfleet/vlmfleet/agent/devicefacts"
	"github.com/vlmfleet/vlmfleet/agent/engine"
	"github.com/vlmfleet/vlmfleet/agent/imageset"
	"github.com/vlmfleet/vlmfleet/agent/outbox"
	"github.com/vlmfleet/vlmfleet/internal/backoff"
	"github.com/vlmfleet/vlmfleet/internal/jobconsumer"
	"github.com/vlmfleet/vlmfleet/internal/tlsca"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// Options are the agent's process-level settings.
type Options struct {
	Log     zerolog.Logger
	Version string
	// Getenv reads the environment (PATH for the engine and telemetry tools).
	Getenv func(string) string
	// JobAckWait is how long JetStream waits for a sign of life before it
	// redelivers a job (default DefaultJobAckWait) when the agent makes its
	// job consumer itself, for a controller from before that leaves it to
	// the agent; otherwise the controller's consumer sets it. The agent
	// reports progress well within it.
	JobAckWait time.Duration
	// Images is the built-in picture set to use; nil loads it on the first
	// job. Agents in one process (the demo) share one set, so the pictures
	// are drawn and encoded once.
	Images *imageset.Set
}

// DefaultJobAckWait is Options.JobAckWait's default (see jobconsumer).
const DefaultJobAckWait = jobconsumer.DefaultAckWait

// Agent is one running agent.
type Agent struct {
	cfg  Config
	opt  Options
	log  zerolog.Logger
	env  engine.Env
	host string

	nc *nats.Conn
	js jetstream.JetStream
	// auth signs the connection in with the agent's credentials (nil: none).
	auth nats.Option
	// tls makes the connection TLS with the CA the agent trusts (nil: none given).
	tls *tls.Config
	// refuse ends Run with the cause: credentials refused or not the
	// agent's own, a server no longer trusted. Set by Run.
	refuse context.CancelCauseFunc

	device    protocol.DeviceFacts
	startedAt time.Time
	// instance names this process and spoolLock the spool it holds, in
	// its hello and heartbeats: the controller keeps one process per id.
	instance  string
	spoolLock string
	// broken are the configured deployments the agent cannot serve, with
	// the reason; cfg.Deployments holds only those it offers.
	broken []protocol.BrokenDeployment

	imagesMu sync.Mutex
	images   *imageset.Set

	// power switches the device for jobs that ask and puts it back;
	// powerControl is what the hello says of it (nil: nothing to say).
	power        *powerHold
	powerControl *protocol.PowerControl

	mu    sync.Mutex
	state string
	jobID string
	seq   uint64
	// cancelJob ends the job jobID on a cancel from the controller.
	cancelJob context.CancelCauseFunc
	// drained is set by a Drain from the controller: the agent finishes its
	// job and fetches no more; undrain, made by the first wait, is closed
	// when it is undrained.
	drained bool
	undrain chan struct{}
	// jobQueue is the open pull for jobs while jobs are served; a drain
	// stops it.
	jobQueue *jobQueue

	// out spools what must reach the controller while Run runs.
	out *outbox.Outbox
	// wire is how spooled messages are sent, as agreed in the handshake.
	wire wireEncoding
	// makesOwnConsumer is set once the controller answered the handshake
	// without saying that it makes the agent's job consumer: a controller
	// from before, which leaves that to the agent.
	makesOwnConsumer atomic.Bool
}

// New checks the configuration; Run connects.
func New(cfg Config, opt Options) (*Agent, error) {
	host, _ := os.Hostname()
	cfg, err := cfg.withSimulatedDevice()
	if err != nil {
		return nil, fmt.Errorf("agent config: %w", err)
	}
	cfg = cfg.withDefaults(host)
	if opt.Getenv == nil {
		opt.Getenv = os.Getenv
	}
	if opt.Version == "" {
		opt.Version = "dev"
	}
	if opt.JobAckWait == 0 {
		opt.JobAckWait = DefaultJobAckWait
	}
	env := engine.Env{
		ModelRoots: cfg.ModelRoots,
		LogDir:     cfg.LogDir,
		SysRoot:    cfg.SysRoot,
		Log:        opt.Log,
		Getenv:     opt.Getenv,
	}
	if err := cfg.validateAgent(); err != nil {
		return nil, fmt.Errorf("agent config: %w", err)
	}
	// A wrong deployment is reported, not fatal: the agent offers the
	// others and announces the broken ones with the reason, so that one
	// typo does not take a device out of the lab unseen.
	log := opt.Log.With().Str("agent", cfg.ID).Logger()
	var broken []protocol.BrokenDeployment
	cfg.Deployments, broken = cfg.CheckDeployments(env)
	for _, b := range broken {
		log.Error().Str("deployment", b.ID).Str("reason", b.Reason).Msg("deployment not offered: its configuration is wrong")
	}
	if len(cfg.Deployments) == 0 {
		log.Error().Int("broken", len(broken)).
			Msg("the agent offers no deployment; it announces itself anyway, so that the controller shows why")
	}
	if cfg.NATSURL == "" {
		return nil, fmt.Errorf("agent config: nats_url is empty; pass --nats-url nats://controller:4222")
	}
	auth, err := cfg.natsAuth()
	if err != nil {
		return nil, fmt.Errorf("agent config: %w", err)
	}
	tlsCfg, err := cfg.natsTLS()
	if err != nil {
		return nil, fmt.Errorf("agent config: %w", err)
	}
	return &Agent{
		auth:   auth,
		tls:    tlsCfg,
		cfg:    cfg,
		opt:    opt,
		log:    log,
		broken: broken,
		env:    env,
		host:   host,
		state:  protocol.AgentIdle,
		images: opt.Images,
	}, nil
}

// ID is the agent's id.
func (a *Agent) ID() string { return a.cfg.ID }

// BrokenDeployments lists the configured deployments the agent does not
// offer, each with the reason, as announced.
func (a *Agent) BrokenDeployments() []protocol.BrokenDeployment {
	return append([]protocol.BrokenDeployment(nil), a.broken...)
}

// Deployments lists what the agent offers, as announced.
func (a *Agent) Deployments() []protocol.Deployment {
	out := make([]protocol.Deployment, 0, len(a.cfg.Deployments))
	for _, d := range a.cfg.Deployments {
		out = append(out, protocol.Deployment{
			ID:           d.ID,
			Engine:       d.Engine.Kind,
			Model:        d.Model,
			ParamsB:      d.ParamsB,
			Quantization: d.Quantization,
			Simulated:    d.Engine.Kind == engine.KindSim,
		})
	}
	return out
}

// Run connects to NATS and serves jobs until ctx ends. It returns a
// *RefusedError when the server refuses the agent's credentials (or wants
// some and the agent has none), at the start or later (revoked), and an
// *UntrustedError when the agent does not trust the server's TLS
// certificate.
func (a *Agent) Run(ctx context.Context) error {
	a.startedAt = time.Now()
	a.instance = newInstance()
	if a.cfg.Simulate != "" {
		a.device = devicefacts.Simulated(a.cfg.Simulate)
	} else {
		a.device = devicefacts.Detect(ctx, devicefacts.Options{SysRoot: a.cfg.SysRoot, Path: a.opt.Getenv("PATH")})
	}
	ctx, refuse := context.WithCancelCause(ctx)
	defer refuse(nil)
	a.refuse = refuse
	err := a.run(ctx, refuse)
	var refused *RefusedError
	var untrusted *UntrustedError
	var duplicate *DuplicateError
	switch cause := context.Cause(ctx); {
	case errors.As(cause, &refused):
		return refused
	case errors.As(cause, &untrusted):
		return untrusted
	case errors.As(cause, &duplicate):
		return duplicate
	}
	return err
}

// connect connects to NATS, waiting for the server to come up. A server
// that refuses the credentials ends the wait at once; once connected, the
// agent reconnects for as long as it runs, unless the server refuses it
// then (its credentials were revoked): refuse ends the agent.
func (a *Agent) connect(ctx context.Context, refuse context.CancelCauseFunc) (*nats.Conn, error) {
	refused := func(err error) *RefusedError {
		return &RefusedError{AgentID: a.cfg.ID, URL: a.cfg.NATSURL, Credentials: a.cfg.credentialsName(), Err: err}
	}
	opts := []nats.Option{
		nats.Name("vlmfleet-agent " + a.cfg.ID),
		nats.CustomInboxPrefix(protocol.AgentInboxPrefix(a.cfg.ID)),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(time.Second),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				a.log.Warn().Err(err).Msg("disconnected from NATS; reconnecting")
			}
		}),
		nats.ReconnectHandler(func(*nats.Conn) { a.log.Info().Msg("reconnected to NATS") }),
		nats.ErrorHandler(a.onNATSError),
		nats.ClosedHandler(func(nc *nats.Conn) {
			if err := nc.LastError(); authError(err) {
				refuse(refused(err))
			}
		}),
	}
	if a.auth != nil {
		opts = append(opts, a.auth)
	}
	var connected atomic.Bool
	if a.tls != nil {
		// A certificate that stops being trusted while the agent
		// reconnects (the controller's CA replaced, or another server at
		// its address) ends the agent as it would at its first
		// connection; nats.go would otherwise retry it in silence.
		opts = append(opts, nats.Secure(tlsca.ReportFailures(a.tls, func(err error) {
			if connected.Load() {
				refuse(a.untrustedError(err))
			}
		})))
	}
	var nc *nats.Conn
	refusals := 0
	err := backoff.Default.Retry(ctx, func(attempt int) error {
		var err error
		nc, err = nats.Connect(a.cfg.NATSURL, opts...)
		if authError(err) {
			// The embedded server refuses a known key for a moment while
			// it reloads its users (another agent being enrolled), so a
			// refusal ends the agent only when it is repeated (1.75 s).
			if refusals++; refusals >= connectRefusals {
				return backoff.Permanent(refused(err))
			}
			a.log.Warn().Err(err).Int("refusal", refusals).Msg("NATS refused the credentials; trying again in case the server was reloading its users")
			return err
		}
		if untrusted(err) {
			return backoff.Permanent(a.untrustedError(err))
		}
		if err != nil && (attempt == 1 || attempt%10 == 0) {
			a.log.Warn().Err(err).Str("url", protocol.RedactURL(a.cfg.NATSURL)).Int("attempt", attempt).
				Msg("NATS not reachable (is the controller up?); retrying")
		}
		return err
	})
	var re *RefusedError
	var ue *UntrustedError
	if errors.As(err, &re) {
		return nil, re
	}
	if errors.As(err, &ue) {
		return nil, ue
	}
	if err != nil {
		return nil, fmt.Errorf("connect to NATS at %s: %w", protocol.RedactURL(a.cfg.NATSURL), err)
	}
	connected.Store(true)
	return nc, nil
}

// untrustedError is the stop of an agent that does not trust the server.
func (a *Agent) untrustedError(err error) *UntrustedError {
	return &UntrustedError{AgentID: a.cfg.ID, URL: a.cfg.NATSURL, CAFile: a.cfg.NATSCA, Pin: a.cfg.NATSCAPin, Err: err}
}

// connectRefusals is how many refusals in a row of the agent's credentials
// at connect end it: a revoked agent stops within two seconds, and one
// refused during a reload of the server's users connects.
const connectRefusals = 4

// onNATSError logs what the server reports on the connection. A refused
// operation most likely means credentials made for another agent id.
func (a *Agent) onNATSError(_ *nats.Conn, sub *nats.Subscription, err error) {
	ev := a.log.Warn().Err(err)
	if errors.Is(err, nats.ErrPermissionViolation) {
		ev = a.log.Error().Err(err).Str("hint", "credentials work only for the agent id they were created for; are these agent "+a.cfg.ID+"'s?")
		if a.ownSubjectRefused(err) && a.refuse != nil {
			// Its own subjects refused: the credentials are another
			// agent's, and nothing it does can succeed.
			a.refuse(&RefusedError{AgentID: a.cfg.ID, URL: a.cfg.NATSURL, Credentials: a.cfg.credentialsName(), Err: err})
		}
	}
	if sub != nil {
		ev = ev.Str("subject", sub.Subject)
	}
	ev.Msg("NATS error")
}

func (a *Agent) run(ctx context.Context, refuse context.CancelCauseFunc) error {
	// Opened first: a spool that another agent process holds (two agents
	// with one id) stops this one before it touches NATS.
	out, err := outbox.Open(outbox.Options{Dir: a.cfg.SpoolDir, MaxBytes: a.cfg.SpoolMaxMiB << 20, Log: a.log})
	if err != nil {
		return fmt.Errorf("agent config: spool_dir: %w", err)
	}
	defer out.Close()
	a.out = out
	a.spoolLock = spoolLockName(a.host, out.Dir())
	// Before the announcement: what a killed run left switched is put
	// back, and the hello tells the power the device is in.
	a.startPower(ctx)
	defer a.power.close(ctx)
	nc, err := a.connect(ctx, refuse)
	if err != nil {
		var refused *RefusedError
		if ctx.Err() != nil && !errors.As(err, &refused) {
			return nil // stopped before the server came up
		}
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return fmt.Errorf("jetstream: %w", err)
	}
	a.nc, a.js = nc, js
	sender := out.StartSending(ctx, a.sendSpooled)
	defer sender.Stop(ctx, spoolDrainTimeout)

	// Subscribed before the announcement, so that a controller that sees the
	// agent can already reach it.
	ctl, err := nc.Subscribe(protocol.ControlSubject(a.cfg.ID), a.onControl)
	if err != nil {
		return fmt.Errorf("subscribe to %s: %w", protocol.ControlSubject(a.cfg.ID), err)
	}
	defer func() { _ = ctl.Unsubscribe() }()
	fctx, cancelFlush := context.WithTimeout(ctx, 10*time.Second)
	err = nc.FlushWithContext(fctx)
	cancelFlush()
	if err != nil && ctx.Err() == nil {
		a.log.Warn().Err(err).Msg("flushing the control subscription")
	}

	if err := a.announce(ctx); err != nil {
		if ctx.Err() != nil {
			// Stopped while the announcement waited for its
			// acknowledgement: it stays in the spool for the next start.
			// The controller may have taken it in already and given this
			// process the id: let it go, or the next start is refused
			// as a second process.
			a.sayStopping(ctx)
			return nil
		}
		return err
	}
	// Ready only once the controller has not refused this process (a
	// second one with the agent's id), so that a refused one never says
	// it is.
	if !a.handshake(ctx) {
		a.log.Info().Str("device", a.device.Name).Int("deployments", len(a.cfg.Deployments)).
			Int("broken_deployments", len(a.broken)).Bool("simulated", a.cfg.Simulate != "").Msg("agent ready")
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		a.heartbeats(ctx)
	}()
	err = a.serveJobs(ctx)
	wg.Wait()
	a.sayStopping(ctx)
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		return nil
	}
	return err
}

func (a *Agent) announce(ctx context.Context) error {
	hello := protocol.AgentHello{
		Schema:      protocol.SchemaVersion,
		AgentID:     a.cfg.ID,
		Hostname:    a.host,
		Version:     a.opt.Version,
		StartedAt:   a.startedAt,
		Simulated:   a.cfg.Simulate != "",
		Device:      a.device,
		Deployments: a.Deployments(),
		Labels:      a.cfg.Labels,
		// What the configuration names but the agent cannot serve, and
		// why: one typo does not take a device out of the lab unseen.
		BrokenDeployments: a.BrokenDeployments(),
		Power:             a.powerControl,
		Level:             protocol.AgentLevel,
		Instance:          a.instance,
		SpoolLock:         a.spoolLock,
	}
	seq, err := a.spool(ctx, protocol.AgentSubject(a.cfg.ID, protocol.KindHello),
		protocol.HelloMsgID(a.cfg.ID, a.startedAt.UnixNano()), hello)
	if err != nil {
		return err
	}
	// The agent takes no job before the controller knows it, as when the
	// announcement was published directly: what a previous run left in the
	// spool goes first, then the announcement.
	if err := a.out.Wait(ctx, seq); err != nil {
		return fmt.Errorf("announce: %w", err)
	}
	return nil
}

func (a *Agent) setState(state, jobID string, cancel context.CancelCauseFunc) {
	a.mu.Lock()
	a.state, a.jobID, a.cancelJob = state, jobID, cancel
	a.mu.Unlock()
}

// cancelledError is the cause of a job's context when the controller
// cancelled the job.
type cancelledError struct{ reason string }

func (e *cancelledError) Error() string { return e.reason }

// onControl handles the controller's commands. A cancel of a job this agent
// is not running is ignored: a queued job is the controller's to remove.
func (a *Agent) onControl(m *nats.Msg) {
	c, drain, err := protocol.DecodeControl(m.Data)
	if err != nil {
		a.log.Warn().Err(err).Str("subject", m.Subject).Msg("ignoring a malformed control message")
		return
	}
	if drain != nil {
		a.setDrained(drain.Drained)
		return
	}
	a.mu.Lock()
	cancel := a.cancelJob
	running := cancel != nil && a.jobID == c.JobID
	a.mu.Unlock()
	if !running {
		a.log.Debug().Str("job", c.JobID).Msg("ignoring a cancel of a job this agent is not running")
		return
	}
	reason := c.Reason
	if reason == "" {
		reason = "cancelled on request"
	}
	a.log.Info().Str("job", c.JobID).Str("reason", reason).Msg("cancelling the running job")
	cancel(&cancelledError{reason: reason})
}

func (a *Agent) heartbeats(ctx context.Context) {
	t := time.NewTicker(time.Duration(a.cfg.HeartbeatInterval))
	defer t.Stop()
	for {
		a.mu.Lock()
		a.seq++
		hb := protocol.Heartbeat{
			Schema: protocol.SchemaVersion, AgentID: a.cfg.ID, Time: time.Now(),
			State: a.state, JobID: a.jobID, Seq: a.seq, Drained: a.drained,
			Instance: a.instance, SpoolLock: a.spoolLock,
		}
		a.mu.Unlock()
		now := a.power.current()
		hb.PowerMode, hb.PowerLimitW = now.Mode, now.LimitW
		a.publishLive(protocol.KindHeartbeat, hb)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// sayStopping sends the agent's last heartbeat and waits (briefly) for
// the controller's answer, which says it has given the agent's id up for
// the next process (a restart with another spool directory is not taken
// for a second process). A process the controller refused says nothing:
// the id is another's.
func (a *Agent) sayStopping(ctx context.Context) {
	var dup *DuplicateError
	if errors.As(context.Cause(ctx), &dup) {
		return
	}
	a.mu.Lock()
	a.seq++
	hb := protocol.Heartbeat{Schema: protocol.SchemaVersion, AgentID: a.cfg.ID, Time: time.Now(), State: a.state, Seq: a.seq,
		Drained: a.drained, Instance: a.instance, SpoolLock: a.spoolLock, Stopping: true}
	a.mu.Unlock()
	data, err := json.Marshal(hb)
	if err != nil {
		return
	}
	// Sent as a request: the answer says the controller has let the id
	// go, before a restart can announce itself. A controller from before
	// does not answer; the wait is short.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	if _, err := a.nc.RequestWithContext(rctx, protocol.AgentSubject(a.cfg.ID, protocol.KindHeartbeat), data); err != nil {
		a.log.Debug().Err(err).Msg("no answer to the last heartbeat")
	}
}

// publishLive sends on core NATS; losing one is harmless.
func (a *Agent) publishLive(kind string, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		a.log.Error().Err(err).Str("kind", kind).Msg("encode live message")
		return
	}
	if err := a.nc.Publish(protocol.AgentSubject(a.cfg.ID, kind), data); err != nil {
		a.log.Debug().Err(err).Str("kind", kind).Msg("publish live message")
	}
}

// spool hands a message that must not be lost to the spool (agent/outbox)
// and returns its sequence number, for a wait until it is sent
// (outbox.Wait), once it is on disk; the spool's sender sends it. So a link that
// is down stops no measurement. The message id makes a retry, or a message
// the spool sends twice, count once.
func (a *Agent) spool(ctx context.Context, subject, msgID string, v any) (uint64, error) {
	return a.spoolEnding(ctx, "", subject, msgID, v)
}

// spoolEnding is spool for a job's last message (jobID set): the job is
// listed as ended, with the message, before the message is spooled, so
// that an agent killed in between finds it listed when the job comes back
// and spools the message then, instead of measuring the job again.
func (a *Agent) spoolEnding(ctx context.Context, jobID, subject, msgID string, v any) (uint64, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return 0, fmt.Errorf("encode %s: %w", subject, err)
	}
	if jobID != "" {
		a.endJob(jobID, &outbox.Message{Subject: subject, MsgID: msgID, Data: data})
	}
	seq, err := a.out.Append(ctx, subject, msgID, data)
	if err != nil {
		return 0, fmt.Errorf("publish %s (%s): %w", subject, msgID, err)
	}
	return seq, nil
}

// spoolDrainTimeout is how long a stopping agent goes on sending its spool:
// enough for what the last job left when NATS is there, and not holding a
// stop up when it is not (the next start sends the rest).
const spoolDrainTimeout = 5 * time.Second

// sendSpooled publishes one spooled message to JetStream on the agent's
// connection, encoded as agreed in the handshake, and returns once the
// stream has acknowledged it.
func (a *Agent) sendSpooled(ctx context.Context, subject, msgID string, data []byte) error {
	_, err := a.js.Publish(ctx, subject, a.wire.encode(subject, data), jetstream.WithMsgID(msgID))
	return err
}
