// Package controller is the lab's centre: it embeds (or connects to) NATS
// with JetStream, ingests what agents report durably into the store, turns
// sweeps into jobs for agents, fans live progress out to web clients and
// serves the JSON API, the live page and the explorer.
package controller

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/vlmfleet/vlmfleet/controller/access"
	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/controller/identity"
	"github.com/vlmfleet/vlmfleet/controller/ingest"
	"github.com/vlmfleet/vlmfleet/controller/jobs"
	"github.com/vlmfleet/vlmfleet/controller/live"
	"github.com/vlmfleet/vlmfleet/controller/store"
	"github.com/vlmfleet/vlmfleet/controller/streams"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// Options configure a Controller.
type Options struct {
	// DataDir holds the bbolt file <DataDir>/vlmfleet.db and the embedded
	// JetStream store <DataDir>/nats.
	DataDir string
	// NATSURL is an external NATS server; empty embeds one. A
	// comma-separated list names the nodes of a cluster: the controller
	// connects to one and fails over to the others.
	NATSURL string
	// StreamReplicas is how many copies of each stream a NATS cluster
	// keeps (1..MaxStreamReplicas; 0 means 1). Above 1 needs an external
	// cluster: the embedded server is one node.
	StreamReplicas int
	// EventsStreamMaxBytes and JobsStreamMaxBytes bound the bytes the
	// events and jobs streams keep (0: DefaultEventsStreamMaxBytes,
	// DefaultJobsStreamMaxBytes; at least MinStreamMaxBytes). A full stream
	// refuses new messages; see docs/operations.md.
	EventsStreamMaxBytes int64
	JobsStreamMaxBytes   int64
	// NATSCredentials is the file the controller signs in to the external
	// server with: an nkey seed or a .creds file. A user and password in
	// NATSURL work too.
	NATSCredentials string
	// NATSCA is a file with the CA the external server's TLS certificate
	// must be signed by; NATSCAPin instead trusts the CA whose
	// fingerprint it is ("sha256:<hex>"), as the server presents it.
	// Either makes the connection TLS.
	NATSCA, NATSCAPin string
	// NATSListen is the embedded server's client address ("127.0.0.1:4222"
	// by default; port -1 or 0 picks a free port).
	NATSListen string
	// Insecure runs the embedded server without authentication: any client
	// may publish and consume anything. Only for a lab on loopback: with a
	// NATSListen address other hosts can reach, New refuses it unless
	// InsecurePublic is set too.
	Insecure bool
	// InsecurePublic allows Insecure on an address other hosts can reach.
	InsecurePublic bool
	// HTTPAddr is where the API and pages are served ("127.0.0.1:8080"; port 0 picks one).
	HTTPAddr string
	// HTTP security (docs/security.md). Every change over HTTP needs the
	// API token: APIToken when set, else the one in APITokenFile (default
	// <DataDir>/api-token), created at the first start. Reads need it too
	// when HTTPAddr is not on loopback, unless PublicRead. HTTPHosts are
	// the names, besides loopback and the listener's address, that the
	// Host header may carry ("name" for any port, or "name:port").
	APIToken     string
	APITokenFile string
	PublicRead   bool
	HTTPHosts    []string
	// TLS is TLSAuto (the default: TLS on listeners off loopback), TLSOn
	// or TLSOff, for the embedded NATS server and HTTP alike. Their
	// certificate is TLSCertFile with its key TLSKeyFile (PEM) when set,
	// else one the controller's own CA in <DataDir>/tls signs
	// (docs/security.md#tls).
	TLS         string
	TLSCertFile string
	TLSKeyFile  string
	// Explorer makes the handler mounted at "/" (and /api/explorer/) from
	// the stored runs' summaries (every figure, no per-request records);
	// nil serves a small page linking /live and /api/runs.
	Explorer func(runs RunSource) http.Handler
	Log      zerolog.Logger
	// HeartbeatTimeout is how long an agent stays online without a heartbeat (default 15 s).
	HeartbeatTimeout time.Duration
	// OrphanCheckInterval is how often queued jobs are checked for a message
	// gone from the jobs stream (deleted, purged, expired), to end them as
	// failed (default 30 s).
	OrphanCheckInterval time.Duration
	// JobAckWait is how long JetStream waits for a sign of life from an
	// agent running a job before it delivers the job again (default
	// DefaultJobAckWait): the AckWait of the agents' job consumers, which
	// the controller makes. A running job is kept alive by the agent.
	JobAckWait time.Duration
	// BodyStallTimeout is how long the controller waits for more of a
	// request body (an import, a sweep) before it drops the request with
	// 408 and frees what it held (default 10 s). Past that long from its
	// start, a body must also average BodyMinRate bytes a second (default
	// 16 KiB), so that a trickle cannot hold one of the import places.
	BodyStallTimeout time.Duration
	BodyMinRate      int
	// Version is reported by /api/health.
	Version string
}

// Controller runs the lab. Create it with New, then Start; Close ends it.
type Controller struct {
	opt   Options
	log   zerolog.Logger
	store *store.Store
	// ingester stores what agents publish on the events stream.
	ingester *ingest.Ingester

	ns       *server.Server
	nc       *nats.Conn
	ncClosed chan struct{}
	js       jetstream.JetStream
	natsURL  string
	// identity keeps the controller's own key, the users the embedded
	// server admits, enrolments, revocations and join tokens;
	// testHookAuthReload, when set, runs before each reload of the users.
	identity           *identity.Registry
	testHookAuthReload atomic.Pointer[func()]
	// natsHost and natsPort are the embedded server's listen address.
	natsHost string
	natsPort int

	// consumers are the durable consumers (events, advisories), drained on
	// Close; testHookRebind, when set, runs as one starts being recreated.
	consumers      []*ingest.Binding
	testHookRebind atomic.Pointer[func(what string)]
	// testHookRepair, when set, runs before the embedded JetStream is
	// restarted (jetstreamwatch.go).
	testHookRepair atomic.Pointer[func(what string)]
	subs           []*nats.Subscription

	httpSrv *http.Server
	httpURL string
	sec     *access.Guard
	tls     *access.TLS

	// events hands live events to subscribers; live is what heartbeats,
	// progress and telemetry tell, which feed takes in.
	events *live.Fanout
	live   *live.State
	feed   *live.Feed
	// instances keeps one live process per agent id.
	instances *agentInstances
	// streams keeps the JetStream streams, their limits and copies.
	streams *streams.Keeper
	// jobs turns sweeps into jobs, publishes, cancels and ends them.
	jobs *jobs.Scheduler
	// agentsJSON keeps each agent's encoding for the agents list.
	agentsJSON agentsJSON
	// problems are what /api/health reports broken (see health.go).
	problems *problems
	metrics  *metrics

	// bgCtx lasts from Start until Close stops the background work.
	bgCtx    context.Context
	bgCancel context.CancelFunc
	bg       sync.WaitGroup
	// done is closed when Close begins, so long-lived handlers (SSE) return.
	done      chan struct{}
	closeOnce sync.Once
	closeErr  error
	startMu   sync.Mutex
	started   bool

	// answering runs the answers to agents' requests (agentanswer.go).
	answering *answering
	// joinLimit rate-limits devices' joins.
	joinLimit *access.JoinLimiter
}

// New checks the options and opens the store. Nothing listens until Start.
func New(opt Options) (*Controller, error) {
	if opt.DataDir == "" {
		return nil, errors.New("controller: DataDir is empty")
	}
	if opt.NATSListen == "" {
		opt.NATSListen = "127.0.0.1:4222"
	}
	if opt.HTTPAddr == "" {
		opt.HTTPAddr = "127.0.0.1:8080"
	}
	if opt.TLS == "" {
		opt.TLS = TLSAuto
	}
	if opt.StreamReplicas == 0 {
		opt.StreamReplicas = 1
	}
	if opt.EventsStreamMaxBytes == 0 {
		opt.EventsStreamMaxBytes = DefaultEventsStreamMaxBytes
	}
	if opt.JobsStreamMaxBytes == 0 {
		opt.JobsStreamMaxBytes = DefaultJobsStreamMaxBytes
	}
	if err := checkNATSOptions(opt); err != nil {
		return nil, err
	}
	if err := streams.CheckLimitOptions(streamOptions(opt)); err != nil {
		return nil, err
	}
	if err := access.CheckTLSOptions(accessOptions(opt)); err != nil {
		return nil, err
	}
	if opt.HeartbeatTimeout <= 0 {
		opt.HeartbeatTimeout = 15 * time.Second
	}
	if opt.OrphanCheckInterval <= 0 {
		opt.OrphanCheckInterval = jobs.DefaultOrphanCheck
	}
	if opt.JobAckWait <= 0 {
		opt.JobAckWait = DefaultJobAckWait
	}
	log := opt.Log.With().Str("component", "controller").Logger()
	st, err := openStore(opt.DataDir, log)
	if err != nil {
		return nil, err
	}
	sec, err := access.NewGuard(accessOptions(opt), log)
	var tlsSt *access.TLS
	if err == nil {
		tlsSt, err = access.SetupTLS(accessOptions(opt), log)
	}
	if err != nil {
		_ = st.Close()
		return nil, err
	}
	c := &Controller{
		opt:       opt,
		log:       log,
		store:     st,
		sec:       sec,
		tls:       tlsSt,
		events:    live.NewFanout(),
		live:      live.NewState(),
		instances: newAgentInstances(),
		problems:  newProblems(),
		answering: newAnswering(),
		joinLimit: access.NewJoinLimiter(),
		done:      make(chan struct{}),
	}
	c.metrics = newMetrics(c)
	c.streams = streams.New(streamOptions(opt), c.refuse, log)
	c.feed = live.NewFeed(c.live, c.events, st, c.refuse, log, c.done)
	c.ingester = c.newIngester()
	c.jobs = c.newScheduler()
	c.identity = c.newRegistry()
	return c, nil
}

// RunSource lists runs; the explorer's RunSource has the same method.
type RunSource interface {
	Runs(ctx context.Context) ([]protocol.Run, error)
}

// RunSummaries lists the stored runs with their combinations' figures and
// telemetry summaries but without per-request records, oldest first.
func (c *Controller) RunSummaries(ctx context.Context) ([]protocol.Run, error) {
	return c.store.Summaries().Runs(ctx)
}

// Job is one job as GET /api/jobs/{id} shows it.
func (c *Controller) Job(ctx context.Context, id string) (api.JobView, error) {
	j, err := c.store.Job(id)
	if err != nil {
		return api.JobView{}, err
	}
	agents, err := c.agentStatuses(ctx)
	if err != nil {
		return api.JobView{}, err
	}
	return jobs.View(j, jobs.AgentsByID(agents)), nil
}

// OnEvent calls fn for every live event until cancel is called. fn is
// called from a single goroutine, in order, and must return quickly
// (hand the event to a channel without blocking if work is needed).
func (c *Controller) OnEvent(fn func(api.Event)) (cancel func()) {
	return c.events.Subscribe(fn)
}

func (c *Controller) emit(kind, agentID string, data any) {
	c.events.Emit(kind, agentID, data)
}

// NATSURL is the URL agents connect to: tls://host:port when the
// embedded server has TLS; 127.0.0.1 for a listener on every address.
func (c *Controller) NATSURL() string { return c.natsURL }

// HTTPURL is the base URL of the API and pages: https://... under TLS.
func (c *Controller) HTTPURL() string { return c.httpURL }

// Start brings up NATS, the streams, ingestion, live subscriptions, job
// publishing and HTTP, and returns once all of them serve. ctx bounds the
// start-up only; the controller runs until Close.
func (c *Controller) Start(ctx context.Context) error {
	c.startMu.Lock()
	defer c.startMu.Unlock()
	if c.started {
		return errors.New("controller: already started")
	}
	c.started = true
	bgCtx, cancel := context.WithCancel(context.Background())
	c.bgCtx, c.bgCancel = bgCtx, cancel
	c.bg.Add(1)
	go func() { defer c.bg.Done(); c.events.Run(bgCtx) }()

	if err := c.startNATS(ctx); err != nil {
		return err
	}
	if err := c.untilJetStreamAnswers(ctx, "streams", c.streams.Ensure); err != nil {
		return err
	}
	handle := c.ingester.Start(bgCtx, &c.bg, c.done)
	if err := c.untilJetStreamAnswers(ctx, "events consumer", func(ctx context.Context) error {
		return c.consume(ctx, protocol.StreamEvents, ingest.EventsConsumerConfig(), handle, "events consumer")
	}); err != nil {
		return err
	}
	if err := c.untilJetStreamAnswers(ctx, "advisories consumer", func(ctx context.Context) error {
		return c.consume(ctx, AdvisoriesStream, streams.AdvisoriesConsumerConfig(), c.jobs.HandleAdvisory, "advisories consumer")
	}); err != nil {
		return err
	}
	c.watchConsumers(bgCtx)
	if err := c.startLive(); err != nil {
		return err
	}
	c.bg.Add(4)
	go func() { defer c.bg.Done(); c.watchJetStream(bgCtx) }()
	go func() { defer c.bg.Done(); c.jobs.PublishLoop(bgCtx) }()
	go func() { defer c.bg.Done(); c.watchAgents(bgCtx) }()
	go func() { defer c.bg.Done(); c.jobs.WatchOrphans(bgCtx) }()
	c.jobs.KickPublisher() // jobs stored but not acknowledged before a restart

	if err := c.startHTTP(); err != nil {
		return err
	}
	if c.NATSAuth() == api.NATSAuthOff {
		c.log.Warn().Str("nats", c.natsURL).Msg("INSECURE: the embedded NATS server accepts any client without credentials; " +
			"anyone who reaches it can forge, steal or delete jobs and results (--insecure)")
	}
	c.tls.LogStart(c.log, c.opt.TLSCertFile)
	c.log.Info().Str("nats", protocol.RedactURL(c.natsURL)).Str("nats_auth", c.NATSAuth()).Str("http", c.httpURL).Str("data_dir", c.opt.DataDir).Msg("controller serving")
	return nil
}

func (c *Controller) startHTTP() error {
	ln, err := net.Listen("tcp", c.opt.HTTPAddr)
	if err != nil {
		return fmt.Errorf("controller: listen http %s: %w", c.opt.HTTPAddr, err)
	}
	c.httpURL = "http://" + displayAddr(ln.Addr().(*net.TCPAddr))
	c.sec.Listening(ln.Addr())
	if c.tls.HTTP {
		c.httpURL = "https://" + strings.TrimPrefix(c.httpURL, "http://")
		ln = tls.NewListener(ln, c.tls.HTTPConfig)
	}
	c.httpSrv = &http.Server{
		Handler:           c.sec.Handler(c.metrics.instrument(c.routes())),
		ReadHeaderTimeout: 10 * time.Second,
		// No WriteTimeout: /api/events streams for as long as the client stays.
		IdleTimeout: 2 * time.Minute,
		ErrorLog:    access.HTTPErrorLog(c.log),
	}
	c.bg.Add(1)
	go func() {
		defer c.bg.Done()
		if err := c.httpSrv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			c.log.Error().Err(err).Msg("http server stopped")
		}
	}()
	return nil
}

// displayAddr turns a listen address into one a browser on this host can open.
func displayAddr(a *net.TCPAddr) string {
	host := a.IP.String()
	if a.IP == nil || a.IP.IsUnspecified() {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, fmt.Sprint(a.Port))
}

// Close stops serving HTTP, stops ingestion, drains NATS, shuts the embedded
// server down and closes the store. It is safe to call more than once and
// on a controller whose Start failed.
func (c *Controller) Close() error {
	c.closeOnce.Do(func() {
		close(c.done)
		var errs []error
		if c.httpSrv != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			if err := c.httpSrv.Shutdown(ctx); err != nil {
				errs = append(errs, fmt.Errorf("http shutdown: %w", err))
			}
			cancel()
		}
		var ccs []jetstream.ConsumeContext
		for _, b := range c.consumers {
			if cc := b.Stop(); cc != nil {
				cc.Drain()
				ccs = append(ccs, cc)
			}
		}
		for _, cc := range ccs {
			select {
			case <-cc.Closed():
			case <-time.After(5 * time.Second):
				cc.Stop()
			}
		}
		if c.bgCancel != nil {
			c.bgCancel()
		}
		c.bg.Wait()
		// Draining the connection lets the live subscriptions' callbacks
		// finish before the store closes.
		if c.nc != nil {
			if err := c.nc.Drain(); err != nil {
				c.nc.Close()
			}
			select {
			case <-c.ncClosed:
			case <-time.After(5 * time.Second):
				c.nc.Close()
			}
		}
		// The subscriptions have ended, so no answer starts any more.
		c.answering.wg.Wait()
		if c.ns != nil {
			c.ns.Shutdown()
			c.ns.WaitForShutdown()
		}
		if err := c.store.Close(); err != nil {
			errs = append(errs, err)
		}
		c.closeErr = errors.Join(errs...)
	})
	return c.closeErr
}
