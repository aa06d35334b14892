package controller

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/controller/jobs"
	"github.com/vlmfleet/vlmfleet/controller/store"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// metricsNamespace prefixes every metric of the controller.
const metricsNamespace = "vlmfleet"

// scrapeTimeout bounds the store reads of one scrape.
const scrapeTimeout = 10 * time.Second

// metrics are the controller's Prometheus metrics, in a registry of its
// own: two controllers in one process (the tests, the demo) never share
// or collide on a metric.
type metrics struct {
	reg      *prometheus.Registry
	ingested *prometheus.CounterVec
	rejected *prometheus.CounterVec
	api      *prometheus.HistogramVec
	// heartbeats and heartbeatDelay show whether the controller keeps up
	// with its fleet's heartbeats: the delay is from the agent's clock to
	// the controller's, so it also holds any skew between the two.
	heartbeats     prometheus.Counter
	heartbeatDelay prometheus.Histogram
	// refusals are what is refused from agents outside the stream.
	refusals *refusals
}

// messageKinds are the label values of the ingest counters: the durable
// kinds, and "other" for a subject that names none (so a forged subject
// cannot add label values).
var messageKinds = []string{protocol.KindHello, protocol.KindState, protocol.KindResult}

func newMetrics(c *Controller) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		ingested: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: metricsNamespace, Name: "messages_ingested_total",
			Help: "Agent messages stored from the events stream, by kind (hello, state, result).",
		}, []string{"kind"}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: metricsNamespace, Name: "messages_rejected_total",
			Help: "Agent messages refused and recorded in /api/rejected, by kind.",
		}, []string{"kind"}),
		api: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: metricsNamespace, Name: "api_request_duration_seconds",
			Help:    "HTTP API and page requests by route pattern, method and status (the event stream excluded).",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"route", "method", "code"}),
		heartbeats: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: metricsNamespace, Name: "heartbeats_total",
			Help: "Agent heartbeats taken in (valid ones, from any agent).",
		}),
		heartbeatDelay: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: metricsNamespace, Name: "heartbeat_delay_seconds",
			Help:    "From a heartbeat's send time (the agent's clock) to the controller handling it; grows when the controller falls behind its fleet.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}),
	}
	m.refusals = newRefusals(c.log)
	for _, k := range append(messageKinds, "other") {
		m.ingested.WithLabelValues(k)
		m.rejected.WithLabelValues(k)
	}
	m.reg.MustRegister(m.ingested, m.rejected, m.refusals.counter, m.api, m.heartbeats, m.heartbeatDelay, &labCollector{c: c},
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// kindLabel is the kind label of a message's subject.
func kindLabel(subject string) string {
	if _, kind, err := protocol.ParseAgentSubject(subject); err == nil && slices.Contains(messageKinds, kind) {
		return kind
	}
	return "other"
}

// handler serves the registry in Prometheus' text format.
func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// instrument times each request by the mux pattern that served it (not the
// raw path, whose ids would make a series per run). The event stream is
// left out: it lasts as long as its client.
func (m *metrics) instrument(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w, code: http.StatusOK}
		mux.ServeHTTP(rec, r)
		route := r.Pattern // set by the mux on r as it matches
		if route == "GET /api/events" {
			return
		}
		if route == "" {
			route = "unmatched"
		}
		m.api.WithLabelValues(route, r.Method, strconv.Itoa(rec.code)).Observe(time.Since(start).Seconds())
	})
}

// statusRecorder keeps the status a handler wrote. Unwrap lets
// http.ResponseController reach the connection's Flush and deadlines.
type statusRecorder struct {
	http.ResponseWriter
	code  int
	wrote bool
}

func (s *statusRecorder) WriteHeader(code int) {
	if !s.wrote {
		s.code, s.wrote = code, true
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	s.wrote = true
	return s.ResponseWriter.Write(b)
}

func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// labCollector reads the lab's state at each scrape: the store and the
// controller's own view are the truth, so nothing is counted twice.
type labCollector struct{ c *Controller }

var (
	descJobs = prometheus.NewDesc(metricsNamespace+"_jobs", "Jobs by state; a job shown stalled (its agent offline, or back without it) counts as stalled only.",
		[]string{"state"}, nil)
	descAgents = prometheus.NewDesc(metricsNamespace+"_agents", "Agents known to the controller, by whether they are online (heartbeat within the timeout).",
		[]string{"online"}, nil)
	descSweepJobs = prometheus.NewDesc(metricsNamespace+"_sweep_jobs", "Jobs of each sweep that has not ended, in total and ended (progress: ended / total).",
		[]string{"sweep", "of"}, nil)
	descNATS = prometheus.NewDesc(metricsNamespace+"_nats_connected", "1 while the controller's NATS connection is up.",
		nil, nil)
	descJetStream = prometheus.NewDesc(metricsNamespace+"_jetstream_ok", "1 while JetStream is available and every stream writes (checked every 5 s).",
		nil, nil)
	descStore = prometheus.NewDesc(metricsNamespace+"_store_bytes", "Size of the controller's store (vlmfleet.db).",
		nil, nil)
	descHealth = prometheus.NewDesc(metricsNamespace+"_health_problems", "Problems /api/health reports, by component (0 or 1 for most; agents: one per silent agent).",
		[]string{"component"}, nil)
	descUp = prometheus.NewDesc(metricsNamespace+"_health_ok", "1 while /api/health says ok.",
		nil, nil)
)

func (l *labCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descJobs, descAgents, descSweepJobs, descNATS, descJetStream, descStore, descHealth, descUp} {
		ch <- d
	}
}

func (l *labCollector) Collect(ch chan<- prometheus.Metric) {
	c := l.c
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	boolGauge := func(d *prometheus.Desc, ok bool) {
		v := 0.0
		if ok {
			v = 1
		}
		gauge(d, v)
	}

	agents, agentsErr := c.agentStatuses(ctx)
	h := c.healthOf(agents, agentsErr)
	boolGauge(descUp, h.Status == api.HealthOK)
	boolGauge(descNATS, h.NATS == "connected")
	boolGauge(descJetStream, h.JetStream == "ok")
	byComponent := map[string]float64{}
	for _, p := range h.Problems {
		byComponent[p.Component]++
	}
	byComponent[ProblemAgents] = float64(len(h.AgentsSilent))
	byComponent[ProblemAgentDuplicate] = float64(len(h.AgentsDuplicate))
	byComponent[ProblemAgentUpgrade] = float64(len(h.AgentsNeedUpgrade))
	for _, comp := range []string{ProblemNATS, ProblemJetStream, ProblemIngest, ProblemStore, ProblemPublish, ProblemAgents,
		ProblemAgentDuplicate, ProblemAgentUpgrade, ProblemReplicas, ProblemStreams} {
		gauge(descHealth, byComponent[comp], comp)
	}
	if n, err := c.store.Size(); err == nil {
		gauge(descStore, float64(n))
	}

	if agentsErr != nil {
		ch <- prometheus.NewInvalidMetric(descJobs, agentsErr)
		return
	}
	online := 0
	for _, a := range agents {
		if a.Online {
			online++
		}
	}
	gauge(descAgents, float64(online), "true")
	gauge(descAgents, float64(len(agents)-online), "false")
	collectJobs(c.store, jobs.AgentsByID(agents), gauge)
}

// collectJobs reports the jobs by state and the unfinished sweeps'
// progress from the store's tallies, kept in memory as jobs change: only
// the jobs that have not ended are looked at, to tell the stalled ones.
func collectJobs(st *store.Store, agents map[string]jobs.AgentStatus, gauge func(*prometheus.Desc, float64, ...string)) {
	states := map[string]float64{}
	for s, n := range st.JobStates() {
		states[string(s)] = float64(n)
	}
	now := time.Now()
	for _, j := range st.OpenJobs("") {
		if stalled, _, _ := jobs.StalledSince(j, agents, now); stalled {
			states[string(j.State)]--
			states["stalled"]++
		}
	}
	for _, s := range []protocol.JobState{protocol.JobQueued, protocol.JobAccepted, protocol.JobStarting, protocol.JobRunning,
		protocol.JobCompleted, protocol.JobFailed, protocol.JobCancelled, protocol.JobRejected, "stalled"} {
		states[string(s)] += 0 // every usual state present, at 0 when none
	}
	for s, n := range states {
		gauge(descJobs, n, s)
	}
	// A finished sweep's series ends, so they do not pile up.
	for id, counts := range st.UnfinishedSweepJobStates() {
		total, ended := 0, 0
		for s, n := range counts {
			total += n
			if s.Terminal() {
				ended += n
			}
		}
		gauge(descSweepJobs, float64(total), id, "total")
		gauge(descSweepJobs, float64(ended), id, "ended")
	}
}
